#!/bin/sh
# An idempotency-aware write: every invocation is logged, the effect is
# made once per SYMBI_IDEMPOTENCY_KEY. WRITE_SLEEP holds the call open
# after the effect, for a worker to be killed in the middle of it.
key="$SYMBI_IDEMPOTENCY_KEY"
echo "$key" >> invocations
if ! grep -qxF "$key" effects 2>/dev/null; then
  echo "$key" >> effects
fi
if [ -f slow ]; then
  sleep 4
fi
echo "written"
