#!/usr/bin/env bash
# Runs the benchmarks behind the figures in docs/benchmarks.md. Each figure
# there is a ratio against a baseline measured in the same run, so numbers
# from a loaded machine are still comparable.
#   scripts/bench.sh            # everything
#   scripts/bench.sh ./policy/  # one package
set -euo pipefail
cd "$(dirname "$0")/.."
pkgs=("${@:-./...}")
go test -run='^$' -bench=. -benchmem -count="${COUNT:-1}" "${pkgs[@]}"
