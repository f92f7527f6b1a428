#!/usr/bin/env bash
# Installs the OPA CLI at the version go.mod names (the OPA symbi-opa links), from
# the Go module proxy, and prints the binary's path. The binary is kept under
# the Go build cache's parent directory (symbi-tools/opa-VERSION/opa, beside
# go-build), which CI caches with the build cache, and reused when present.
#   SYMBI_OPA=$(scripts/opa.sh) go test ./e2e -run OPA
# e2e/opacli_test.go runs it over the shipped policy pack and schema; without
# the binary those tests skip and say so.
set -euo pipefail
cd "$(dirname "$0")/.."
version=$(go list -m -f '{{.Version}}' github.com/open-policy-agent/opa)
dir="${SYMBI_TOOLS:-$(dirname "$(go env GOCACHE)")/symbi-tools}/opa-$version"
if [[ ! -x "$dir/opa" ]]; then
  echo "installing github.com/open-policy-agent/opa@$version into $dir" >&2
  mkdir -p "$dir"
  GOBIN="$dir" go install "github.com/open-policy-agent/opa@$version" >&2
fi
"$dir/opa" version >/dev/null
echo "$dir/opa"
