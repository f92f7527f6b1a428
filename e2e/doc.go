// Package e2e holds end-to-end tests of the product's reliability and
// security bars (SPEC section 10): the symbi binary is built once per test
// run and driven with os/exec against real packages, the local fake
// OpenAI-compatible server, real policies and the real npm MCP filesystem
// server. docs/reliability.md says what each test checks and how to run them.
//
// The package has no non-test code and must not be imported. Its tests never
// edit files outside their temporary directories; the configurations they
// run live in testdata/e2e.
package e2e
