#!/usr/bin/env bash
# Builds Jaeger v2 (the all-in-one: OTLP receivers, memory storage, the
# query API) at the version tools/jaeger/go.mod pins, from the Go module
# proxy, and prints the binary's path. Jaeger's go.mod has replace
# directives, so `go install pkg@version` refuses it; tools/jaeger is a
# module of its own (never symbi's go.mod) that names it with `go get -tool`,
# and the binary is built there. It is a long build on 2 cores, so the
# binary is kept under the Go build cache's parent directory
# (symbi-tools/jaeger-VERSION/jaeger, beside go-build), which CI caches with
# the build cache, and reused when present.
#   SYMBI_JAEGER=$(scripts/jaeger.sh) go test ./e2e -run Telemetry
# e2e/telemetry_test.go sends a run's spans to it and reads them back; without
# the binary that test skips and says so.
set -euo pipefail
cd "$(dirname "$0")/../tools/jaeger"
version=$(go list -m -f '{{.Version}}' github.com/jaegertracing/jaeger)
dir="${SYMBI_TOOLS:-$(dirname "$(go env GOCACHE)")/symbi-tools}/jaeger-$version"
if [[ ! -x "$dir/jaeger" ]]; then
  echo "building github.com/jaegertracing/jaeger/cmd/jaeger@$version into $dir (a few minutes)" >&2
  mkdir -p "$dir"
  go build -o "$dir/jaeger.tmp" github.com/jaegertracing/jaeger/cmd/jaeger >&2
  mv "$dir/jaeger.tmp" "$dir/jaeger"
fi
"$dir/jaeger" --help >/dev/null 2>&1
echo "$dir/jaeger"
