#!/bin/sh
# Forks children that outlive it and hold stdout open. With MODE=exit the
# tool itself exits at once; otherwise it waits for them (and times out).
sleep 300 &
echo $! >> "$PIDFILE"
( sleep 300; echo late ) &
echo $! >> "$PIDFILE"
echo forked
if [ "$MODE" = exit ]; then
  exit 0
fi
wait
