package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestBinaryLeavesOutTestLibraries: libraries only tests use must not be
// linked into the shipped binary, where their package init would run at
// every start. go-cmp came in through hclwrite (internal/hclfmt says why
// and how it was left out).
func TestBinaryLeavesOutTestLibraries(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH")
	}
	out, err := exec.Command(goTool, "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, banned := range []string{"github.com/google/go-cmp/", "github.com/rogpeppe/go-internal/testscript"} {
			if strings.HasPrefix(pkg+"/", banned) {
				t.Errorf("symbi links %s, a test library", pkg)
			}
		}
	}
}
