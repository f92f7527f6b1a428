#!/bin/sh
# Prints 4 GiB: the executor must stop reading at max_output_bytes and kill
# the whole pipeline. Records its pid and the pipeline's last pid in $PIDFILE.
echo $$ >> "$PIDFILE"
head -c 4294967296 /dev/zero | tr '\0' 'x' &
echo $! >> "$PIDFILE"
wait
