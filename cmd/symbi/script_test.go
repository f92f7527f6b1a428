package main

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

var update = flag.Bool("update", false, "rewrite the expected output of the scripts")

// TestMain lets the scripts run `symbi` as the in-process run function.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"symbi":                 func() { os.Exit(run(context.Background(), os.Args[1:])) },
		"symbi-test-mcp-server": serveTestMCP,
	})
}

// TestScripts runs testdata/script/*.txtar of the repository and this
// command's own testdata/*.txtar: each script drives the command line and
// checks exit codes, stdout and stderr. $REPO is the repository root, so a
// script can use the examples.
func TestScripts(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	shared, err := filepath.Glob(filepath.Join(root, "testdata", "script", "*.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	own, err := filepath.Glob(filepath.Join("testdata", "*.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Files:         append(shared, own...),
		UpdateScripts: *update,
		Setup: func(env *testscript.Env) error {
			env.Setenv("REPO", root)
			return nil
		},
	})
}
