#!/bin/sh
# Fails the first $FAILS calls (counted in $COUNTER), then succeeds.
n=$(cat "$COUNTER" 2>/dev/null || echo 0)
n=$((n + 1))
echo "$n" > "$COUNTER"
if [ "$n" -le "$FAILS" ]; then
  echo "flaky failure $n" >&2
  exit 1
fi
echo "ok after $n calls"
