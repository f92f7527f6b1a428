#!/bin/sh
# Stand-in executor for the example's shell tool: it echoes the arguments it
# was given (JSON on stdin) instead of running anything.
echo "would run: $(cat)"
