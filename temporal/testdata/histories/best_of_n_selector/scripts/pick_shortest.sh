# A best-of-N command selector (examples/best_of_n_selector.hcl): reads the
# eligible candidates as JSON on stdin, {"candidates": [{"index": 0,
# "content": "...", ...}, ...], ...}, and prints the index of the one whose
# content is shortest. Its output must be that index and nothing else.
grep -oE '"index":[0-9]+,"content":"([^"\\]|\\.)*"' |
  awk -F'"content":' '{ sub(/^"index":/, "", $1); sub(/,$/, "", $1); print length($2), $1 }' |
  sort -n | head -n 1 | awk '{ print $2 }'
