// Package sibling finds the helper binaries symbi runs (symbi-opa,
// symbi-temporal): beside the running executable, after symlinks, then on
// PATH, so that `go build -o bin/ ./cmd/...` and `go install ./cmd/...`
// both work.
//
// This package must not import any other symbi package.
package sibling
