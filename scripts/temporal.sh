#!/usr/bin/env bash
# Installs the Temporal CLI (its dev server runs the Temporal end-to-end tests)
# from the Go module proxy and prints the binary's path. Like scripts/opa.sh it
# keeps the binary beside the Go build cache (symbi-tools/temporal-VERSION/),
# which CI caches with the build cache, and reuses it when present. The build
# takes several minutes on two cores the first time.
#   SYMBI_TEMPORAL=$(scripts/temporal.sh) go test ./e2e -run Temporal
set -euo pipefail
cd "$(dirname "$0")/.."
version=v1.5.1
dir="${SYMBI_TOOLS:-$(dirname "$(go env GOCACHE)")/symbi-tools}/temporal-$version"
if [[ ! -x "$dir/temporal" ]]; then
  echo "installing github.com/temporalio/cli/cmd/temporal@$version into $dir" >&2
  mkdir -p "$dir"
  # A module of its own: the CLI's dependencies never touch symbi's go.mod.
  GOBIN="$dir" GOFLAGS=-mod=mod go install "github.com/temporalio/cli/cmd/temporal@$version" >&2
fi
"$dir/temporal" --version >/dev/null
echo "$dir/temporal"
