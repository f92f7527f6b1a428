#!/bin/sh
# Fails on purpose with exit status 3 and a message on stderr.
echo "something broke: disk on fire" >&2
exit 3
