#!/bin/sh
# Stand-in executor for the example's delete_file tool: it deletes nothing.
echo "would delete: $(cat)"
