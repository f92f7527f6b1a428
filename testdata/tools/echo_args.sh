#!/bin/sh
# Echoes the arguments (JSON on stdin) back as the result.
cat
