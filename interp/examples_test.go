package interp

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/symbi-dev/symbi/lang"
	"github.com/symbi-dev/symbi/plan"
)

// TestExamples compiles every configuration in examples/ (each *.hcl file, and
// each subdirectory of *.hcl files) as `symbi plan` would: without errors, to
// a plan that encodes and decodes.
func TestExamples(t *testing.T) {
	var paths []string
	files, _ := filepath.Glob("../examples/*.hcl")
	for _, f := range files {
		if !lang.IsTestFile(f) && !strings.HasSuffix(f, plan.LockFileSuffix) { // not the examples' tests, nor a configuration's lock file
			paths = append(paths, f)
		}
	}
	dirs, _ := filepath.Glob("../examples/*")
	for _, d := range dirs {
		if hcl, _ := filepath.Glob(filepath.Join(d, "*.hcl")); len(hcl) > 0 {
			paths = append(paths, d)
		}
	}
	if len(paths) < 6 {
		t.Fatalf("only %d examples", len(paths))
	}
	for _, p := range paths {
		t.Run(strings.TrimPrefix(p, "../examples/"), func(t *testing.T) {
			cfg, diags := Compile(p, Options{LookupEnv: noEnv})
			if diags.HasErrors() {
				t.Fatal(listDiags(diags))
			}
			js, err := plan.Encode(cfg.Plan)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := plan.Decode(js); err != nil {
				t.Fatal(err)
			}
		})
	}
}

var fenceRE = regexp.MustCompile("(?s)```hcl\n(.*?)```")

// TestLanguageDocExamples validates every ```hcl block of docs/language.md
// on its own, in a directory that has the examples' prompts, scripts and
// policies, so the reference shows only configurations that work.
func TestLanguageDocExamples(t *testing.T) {
	doc, err := os.ReadFile("../docs/language.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := fenceRE.FindAllSubmatch(doc, -1)
	if len(blocks) < 10 {
		t.Fatalf("only %d hcl examples in docs/language.md", len(blocks))
	}
	examples, err := filepath.Abs("../examples")
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range blocks {
		src := m[1]
		line := bytes.Count(doc[:bytes.Index(doc, src)], []byte("\n")) + 1
		t.Run(strings.ReplaceAll(firstLine(src), " ", "_"), func(t *testing.T) {
			dir := t.TempDir()
			for _, sub := range []string{"prompts", "scripts", "policies"} {
				if err := os.Symlink(filepath.Join(examples, sub), filepath.Join(dir, sub)); err != nil {
					t.Fatal(err)
				}
			}
			writeFile(t, filepath.Join(dir, "main.hcl"), src)
			_, diags := Compile(dir, Options{Validate: true, LookupEnv: noEnv})
			if diags.HasErrors() {
				t.Fatalf("docs/language.md example %d (line %d):\n%s", i+1, line, listDiags(diags))
			}
		})
	}
}

func firstLine(b []byte) string {
	s, _, _ := strings.Cut(string(b), "\n")
	if len(s) > 40 {
		s = s[:40]
	}
	return s
}
