#!/usr/bin/env bash
# Runs the benchmarks behind the figures in docs/benchmarks.md. Each figure
# there is a ratio against a baseline measured in the same run, so numbers
# from a loaded machine are still comparable.
#   scripts/bench.sh            # everything
#   scripts/bench.sh ./policy/  # one package
# The Temporal benchmarks (./temporal) need a service and skip without one:
#   SYMBI_TEMPORAL_ADDRESS=127.0.0.1:7233 scripts/bench.sh ./temporal/
set -euo pipefail
cd "$(dirname "$0")/.."
pkgs=("${@:-./...}")
go test -run='^$' -bench=. -benchmem -count="${COUNT:-1}" "${pkgs[@]}"
