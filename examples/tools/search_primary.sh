#!/bin/sh
# The primary search backend of examples/tools-resilience.hcl. It is down on
# purpose: every call fails, so the example shows retry, the circuit breaker
# opening, and the fallback answering.
cat > /dev/null
echo "search backend unavailable (HTTP 503 from upstream)" >&2
exit 1
