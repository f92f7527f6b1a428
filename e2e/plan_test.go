package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// exampleConfigs lists every configuration under examples/: each *.hcl
// file on its own, and each subdirectory with *.hcl files as one
// configuration.
func exampleConfigs(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join("..", "examples"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		switch {
		case e.IsDir():
			if m, _ := filepath.Glob(filepath.Join("..", "examples", e.Name(), "*.hcl")); len(m) > 0 {
				out = append(out, e.Name())
			}
		case strings.HasSuffix(e.Name(), ".lock.hcl"): // a configuration's lock file, not one
		case strings.HasSuffix(e.Name(), ".hcl") && !strings.HasSuffix(e.Name(), ".symbitest.hcl"): // not the examples' tests
			out = append(out, e.Name())
		}
	}
	if len(out) < 10 {
		t.Fatalf("only %d example configurations: %v", len(out), out)
	}
	return out
}

// TestPlansAreByteIdentical copies examples/ to two directories at
// different absolute paths and depths and plans every configuration in
// each: from inside the copy with a relative path, and from elsewhere with
// an absolute one and a different environment. The canonical JSON must be
// byte-identical, must not mention either directory, and must match what
// `plan -out` saves; so must the readable tree. Every example must also
// validate and be in canonical format.
func TestPlansAreByteIdentical(t *testing.T) {
	t.Parallel()
	a := filepath.Join(t.TempDir(), "examples")
	b := filepath.Join(t.TempDir(), "deeper", "and", "elsewhere", "examples")
	copyTree(t, filepath.Join("..", "examples"), a)
	copyTree(t, filepath.Join("..", "examples"), b)
	elsewhere := t.TempDir()
	otherEnv := []string{"DOCS_MCP_URL=http://10.9.8.7:1234/mcp", "OPENAI_BASE_URL=http://10.9.8.7:1/v1", "TZ=Asia/Kolkata", "LANG=C"}

	for _, cfg := range exampleConfigs(t) {
		t.Run(cfg, func(t *testing.T) {
			t.Parallel()
			if r := symbi(t, call{dir: a}, "validate", cfg); r.code != 0 {
				t.Fatalf("validate %s:\n%s", cfg, r)
			}
			if r := symbi(t, call{dir: a}, "fmt", "-check", "-diff", cfg); r.code != 0 {
				t.Errorf("fmt -check %s: the example is not in canonical form\n%s", cfg, r)
			}
			first := symbi(t, call{dir: a}, "plan", "-json", cfg)
			if first.code != 0 {
				t.Fatalf("plan -json %s:\n%s", cfg, first)
			}
			again := symbi(t, call{dir: a}, "plan", "-json", cfg)
			other := symbi(t, call{dir: elsewhere, env: otherEnv}, "plan", "-json", filepath.Join(b, cfg))
			if other.code != 0 {
				t.Fatalf("plan -json %s from elsewhere:\n%s", cfg, other)
			}
			if again.stdout != first.stdout {
				t.Errorf("two plans of %s in the same directory differ:\n%s", cfg, firstDifference(first.stdout, again.stdout))
			}
			if other.stdout != first.stdout {
				t.Errorf("the plans of %s in %s and %s differ:\n%s", cfg, a, b, firstDifference(first.stdout, other.stdout))
			}
			for _, d := range []string{a, b, elsewhere, filepath.Dir(a), filepath.Dir(b)} {
				if strings.Contains(first.stdout, d) || strings.Contains(other.stdout, d) {
					t.Errorf("the plan of %s mentions the directory %s", cfg, d)
				}
			}
			var doc struct {
				FormatVersion json.RawMessage `json:"format_version"`
				SourceHash    string          `json:"source_hash"`
			}
			if err := json.Unmarshal([]byte(first.stdout), &doc); err != nil || len(doc.FormatVersion) == 0 || len(doc.SourceHash) != 64 {
				t.Errorf("the plan of %s has format_version %s and source_hash %q (%v)", cfg, doc.FormatVersion, doc.SourceHash, err)
			}

			// The readable tree is what reviewers diff: the same holds.
			treeA := symbi(t, call{dir: a}, "plan", cfg)
			treeB := symbi(t, call{dir: elsewhere, env: otherEnv}, "plan", filepath.Join(b, cfg))
			if treeA.code != 0 || treeB.code != 0 {
				t.Fatalf("plan %s:\n%s\n%s", cfg, treeA, treeB)
			}
			if treeA.stdout != treeB.stdout {
				t.Errorf("the readable plans of %s in %s and %s differ:\n%s", cfg, a, b, firstDifference(treeA.stdout, treeB.stdout))
			}

			out := filepath.Join(t.TempDir(), "plan.json")
			if r := symbi(t, call{dir: a}, "plan", "-out", out, cfg); r.code != 0 {
				t.Fatalf("plan -out %s:\n%s", cfg, r)
			}
			saved, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(bytes.TrimSpace(saved), bytes.TrimSpace([]byte(first.stdout))) {
				t.Errorf("plan -out saved something else than plan -json prints:\n%s", firstDifference(first.stdout, string(saved)))
			}
		})
	}
}

// firstDifference shows where two texts part.
func firstDifference(x, y string) string {
	i := 0
	for i < len(x) && i < len(y) && x[i] == y[i] {
		i++
	}
	from := max(0, i-120)
	return "…" + x[from:min(len(x), i+120)] + "\n---- versus\n…" + y[from:min(len(y), i+120)]
}
