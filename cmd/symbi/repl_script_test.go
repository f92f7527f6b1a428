package main

import (
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestReplScripts runs testdata/script/repl*.txtar alone (TestScripts runs
// them with every other script), so `go test -run Repl` covers the REPL's
// scripted sessions.
func TestReplScripts(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(root, "testdata", "script", "repl*.txtar"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no repl scripts: %v", err)
	}
	testscript.Run(t, testscript.Params{
		Files:         files,
		UpdateScripts: *update,
		Setup: func(env *testscript.Env) error {
			env.Setenv("REPO", root)
			// Keep the history of interactive sessions out of $HOME.
			env.Setenv("SYMBI_REPL_HISTORY", "")
			return nil
		},
	})
}
