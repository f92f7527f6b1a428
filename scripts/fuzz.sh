#!/usr/bin/env bash
# Runs every fuzz target for FUZZTIME each (default 60s), one after another.
#   scripts/fuzz.sh                 # all targets, 60s each
#   FUZZTIME=10s scripts/fuzz.sh    # shorter
#   FUZZTIME=50000x scripts/fuzz.sh # a number of inputs: no wall-clock deadline,
#                                   # so no Go 1.26 "context deadline exceeded"
#                                   # flake (golang/go#75804) on a loaded machine
#   scripts/fuzz.sh FuzzCompile     # only targets whose name matches
# Each new interesting input is minimised for at most FUZZMINIMIZETIME
# (default 5s; Go's own default, 60s, let FuzzSplitParse and FuzzResponse
# spend their whole run minimising one input).
# A failure leaves its input under the package's testdata/fuzz/ directory;
# commit it as a regression seed once the bug is fixed.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-60s}
minimizetime=${FUZZMINIMIZETIME:-5s}
filter=${1:-.}

grep -rlE '^func Fuzz' --include='*_test.go' . | sort | while read -r file; do
  pkg=./$(dirname "${file#./}")
  for target in $(grep -oE '^func Fuzz[A-Za-z0-9_]+' "$file" | cut -d' ' -f2); do
    [[ $target =~ $filter ]] || continue
    echo "== $pkg $target ($fuzztime)"
    go test -run='^$' -fuzz="^${target}\$" -fuzztime="$fuzztime" -fuzzminimizetime="$minimizetime" "$pkg"
  done
done
