#!/bin/sh
# Never answers: the executor must kill it (and its sleep) at the timeout.
echo $$ >> "$PIDFILE"
sleep 300 &
echo $! >> "$PIDFILE"
wait
