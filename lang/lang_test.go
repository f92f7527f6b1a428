package lang

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

func parseOne(t testing.TB, src string) (*Module, hcl.Diagnostics) {
	t.Helper()
	return Parse([]Source{{Name: "main.hcl", Bytes: []byte(src)}})
}

func TestParseKeepsEveryBlockRaw(t *testing.T) {
	mod, diags := parseOne(t, `
symbi {
  state_dir = ".symbi"
}
variable "q" {
  default = "x"
}
locals {
  a = 1
  b = local.a
}
recovery "r" {
  retry {}
  fallback { tools = [tool.x] }
  retry {}
}
agent "a" {
  model = model.m
  reflect {
    rubric {
      criterion "accuracy" { weight = 1 }
      criterion "brevity" { weight = 2 }
    }
  }
}
`)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if len(mod.Settings) != 1 || len(mod.Variables) != 1 || len(mod.Locals) != 2 || len(mod.Blocks) != 2 {
		t.Fatalf("decoded %d settings, %d variables, %d locals, %d blocks", len(mod.Settings), len(mod.Variables), len(mod.Locals), len(mod.Blocks))
	}
	if mod.Locals[0].Name != "a" || mod.Locals[1].Name != "b" {
		t.Errorf("locals out of source order: %s, %s", mod.Locals[0].Name, mod.Locals[1].Name)
	}
	r := mod.Blocks[0]
	var kinds []string
	for _, s := range r.Blocks {
		kinds = append(kinds, s.Type)
	}
	if got := strings.Join(kinds, ","); got != "retry,fallback,retry" {
		t.Errorf("recovery strategies in order %s", got)
	}
	a := mod.Blocks[1]
	if a.Address() != "agent.a" {
		t.Errorf("address %s", a.Address())
	}
	crit := a.One("reflect").One("rubric").Nested("criterion")
	if len(crit) != 2 || crit[1].Name != "brevity" {
		t.Errorf("criteria %v", crit)
	}
	if tr := a.Attrs["model"].Expr.Variables(); len(tr) != 1 || tr[0].RootName() != "model" {
		t.Errorf("reference not kept as a traversal")
	}
}

func TestParseDiagnostics(t *testing.T) {
	for _, tc := range []struct{ src, summary string }{
		{`modle "x" {}`, "Unsupported block type"},
		{"model \"x\" {\n  nmae = 1\n}", "Unsupported argument"},
		{`model "X" {}`, "Invalid name"},
		{"agent \"a\" {\n  loop {}\n  loop {}\n}", "Duplicate loop block"},
		{"model {}", "Missing name for model"},
		{strings.Repeat("[", MaxNesting+1), "Nesting too deep"},
	} {
		_, diags := parseOne(t, tc.src)
		found := false
		for _, d := range diags {
			if d.Summary == tc.summary && d.Subject != nil {
				found = true
			}
		}
		if !found {
			t.Errorf("%q: want %q, got %v", tc.src, tc.summary, diags)
		}
	}
}

func TestTooDeepIgnoresStringsAndComments(t *testing.T) {
	deep := strings.Repeat("[", MaxNesting+5)
	for _, src := range []string{
		`x = "` + deep + `"`,
		"# " + deep + "\n",
		"// " + deep + "\n",
		"/* " + deep + " */",
	} {
		if _, bad := tooDeep([]byte(src)); bad {
			t.Errorf("%.20q counted as nesting", src)
		}
	}
	if pos, bad := tooDeep([]byte("x = 1\ny = " + deep)); !bad || pos.Line != 2 {
		t.Errorf("deep nesting on line 2 not found: %v %v", pos, bad)
	}
}

// FuzzParse parses arbitrary bytes; it must never panic, and every
// diagnostic must have a range.
func FuzzParse(f *testing.F) {
	seeds, _ := filepath.Glob("../testdata/errors/*.hcl")
	for _, s := range seeds {
		if b, err := os.ReadFile(s); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("agent \"a\" {\n  model = model.m\n}\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		_, diags := Parse([]Source{{Name: "fuzz.hcl", Bytes: src}})
		for _, d := range diags {
			if d.Subject == nil {
				t.Errorf("diagnostic without a range: %s", d.Summary)
			}
		}
	})
}
