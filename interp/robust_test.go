package interp

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/symbi-dev/symbi/lang"
	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/plan/eval"
)

func noEnv(string) (string, bool) { return "", false }

// compileText compiles one file named main.hcl in a fresh directory.
func compileText(t *testing.T, src string, extra map[string]string, opts Options) (*Config, hcl.Diagnostics) {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.hcl"), []byte(src))
	for name, content := range extra {
		writeFile(t, filepath.Join(dir, name), []byte(content))
	}
	if opts.LookupEnv == nil {
		opts.LookupEnv = noEnv
	}
	return Compile(dir, opts)
}

const offline = `
model "m" {
  provider = "scripted"
  script   = "s.json"
}
`

// Bad input gives diagnostics with ranges, never a panic or a hang.
func TestBadInput(t *testing.T) {
	deep := strings.Repeat("(", 5000) + "1" + strings.Repeat(")", 5000)
	deepList := strings.Repeat("[", 5000) + strings.Repeat("]", 5000)
	huge := strings.Repeat("x", 1<<20)
	for _, tc := range []struct {
		name    string
		src     string
		extra   map[string]string
		wantErr bool
	}{
		{"empty file", "", nil, false},
		{"binary file", "\x00\x01\xff\xfe model \x00 {", nil, true},
		{"invalid UTF-8", "model \"m\xff\" {}\n", nil, true},
		{"deeply nested expression", "locals {\n  x = " + deep + "\n}\n", nil, true},
		{"deeply nested list", "locals {\n  x = " + deepList + "\n}\n", nil, true},
		{"nested as deep as allowed", "locals {\n  x = " + strings.Repeat("[", 200) + strings.Repeat("]", 200) + "\n}\n", nil, false},
		{"huge string", "locals {\n  x = \"" + huge + "\"\n}\n", nil, false},
		{"missing script", offline, nil, true},
		{"missing prompt", offline + "agent \"a\" {\n  model = model.m\n  system = file(\"nope.md\")\n}\n", map[string]string{"s.json": "{}"}, true},
		{"unreadable policy directory as file", "policy \"p\" {\n  opa {\n    modules = [\"dir\"]\n    query = \"data.x.allow\"\n  }\n}\n", map[string]string{"dir/a.rego": "package x\n"}, true},
		{"binary policy", "policy \"p\" {\n  opa {\n    modules = [\"p.rego\"]\n    query = \"data.x.allow\"\n  }\n}\n", map[string]string{"p.rego": "\x00\xff\x00garbage"}, true},
		{"block with a number label", "model 1 {}\n", nil, true},
		{"nothing but a brace", "}", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, diags := compileText(t, tc.src, tc.extra, Options{})
			if diags.HasErrors() != tc.wantErr {
				t.Fatalf("errors = %v, want %v:\n%s", diags.HasErrors(), tc.wantErr, listDiags(diags))
			}
			for _, d := range diags {
				if d.Subject == nil {
					t.Errorf("diagnostic without a range: %s", describe(d))
				}
			}
			if !tc.wantErr && cfg == nil {
				t.Fatal("no config")
			}
		})
	}
}

func TestUnreadablePolicyFile(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads every file")
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.hcl"), []byte("policy \"p\" {\n  opa {\n    modules = [\"p.rego\"]\n    query = \"data.x.allow\"\n  }\n}\n"))
	writeFile(t, filepath.Join(dir, "p.rego"), []byte("package x\nallow := true\n"))
	if err := os.Chmod(filepath.Join(dir, "p.rego"), 0); err != nil {
		t.Fatal(err)
	}
	_, diags := Compile(dir, Options{LookupEnv: noEnv})
	if !diags.HasErrors() || diags[0].Subject == nil || diags[0].Summary != "Cannot read file" {
		t.Fatalf("want Cannot read file with a range, got:\n%s", listDiags(diags))
	}
}

func TestMissingPath(t *testing.T) {
	_, diags := Compile(filepath.Join(t.TempDir(), "nope"), Options{})
	if !diags.HasErrors() || diags[0].Summary != "Cannot read configuration" {
		t.Fatalf("got:\n%s", listDiags(diags))
	}
	_, diags = Compile(t.TempDir(), Options{})
	if !diags.HasErrors() || diags[0].Summary != "No configuration files" {
		t.Fatalf("got:\n%s", listDiags(diags))
	}
}

// Variables: --var beats --var-file beats SYMBI_VAR_ beats the default.
func TestVariablePrecedence(t *testing.T) {
	src := `
variable "a" { default = "default" }
variable "b" { default = "default" }
variable "c" { default = "default" }
variable "d" { default = "default" }
variable "n" { type = number }
`
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.hcl"), []byte(src))
	writeFile(t, filepath.Join(dir, "vars.hcl.vars"), []byte("a = \"file\"\nb = \"file\"\n"))
	writeFile(t, filepath.Join(dir, "more.json"), []byte(`{"n": 3}`))
	env := map[string]string{"SYMBI_VAR_a": "env", "SYMBI_VAR_b": "env", "SYMBI_VAR_c": "env"}
	cfg, diags := Compile(dir, Options{
		Vars:      map[string]string{"a": "flag"},
		VarFiles:  []string{filepath.Join(dir, "vars.hcl.vars"), filepath.Join(dir, "more.json")},
		LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok },
	})
	if diags.HasErrors() {
		t.Fatal(listDiags(diags))
	}
	want := map[string]string{"a": `"flag"`, "b": `"file"`, "c": `"env"`, "d": `"default"`, "n": `3`}
	for _, v := range cfg.Plan.Variables {
		if got := string(v.Value); got != want[v.Name] {
			t.Errorf("var.%s = %s, want %s", v.Name, got, want[v.Name])
		}
	}
	got := cfg.Scope.Variables["var"].GetAttr("n")
	if !got.RawEquals(cty.NumberIntVal(3)) {
		t.Errorf("scope var.n = %#v", got)
	}
}

func TestUndeclaredVarFlag(t *testing.T) {
	_, diags := compileText(t, `variable "question" { default = "x" }`, nil, Options{Vars: map[string]string{"questoin": "y"}})
	if !diags.HasErrors() || !strings.Contains(diags[0].Detail, `Did you mean "question"?`) {
		t.Fatalf("got:\n%s", listDiags(diags))
	}
}

// validate compiles with unknown values for variables without one, so the
// same checks run without inputs; plan insists on a value.
func TestValidateWithUnknownVariables(t *testing.T) {
	src := `
variable "iterations" { type = number }
variable "name" { type = string }
` + offline + `
budget "b" {
  max_iterations = var.iterations
}
agent "a" {
  model       = model.m
  budget      = budget.b
  description = "for ${var.name}"
}
`
	extra := map[string]string{"s.json": `{"turns":[]}`}
	if _, diags := compileText(t, src, extra, Options{Validate: true}); diags.HasErrors() {
		t.Fatalf("validate: %s", listDiags(diags))
	}
	if _, diags := compileText(t, src, extra, Options{}); !diags.HasErrors() {
		t.Fatal("plan without values should fail")
	}
	// A check that needs an unknown value waits for plan instead of
	// judging a default.
	bon := offline + `
variable "n" { type = number }
agent "a" { model = model.m }
budget "bon" { max_total_tokens = 1000 }
best_of_n "b" {
  agent      = agent.a
  candidates = var.n
  budget     = budget.bon
  estimate { total_tokens_per_candidate = 400 }
  scorer { expr = 1 }
}
`
	if _, diags := compileText(t, bon, extra, Options{Validate: true}); diags.HasErrors() {
		t.Fatalf("validate judged an unknown: %s", listDiags(diags))
	}
	if _, diags := compileText(t, bon, extra, Options{Vars: map[string]string{"n": "3"}}); !diags.HasErrors() {
		t.Fatal("3 × 400 tokens should not fit 1000")
	}
	bad := strings.Replace(src, "model.m\n  budget", "model.n\n  budget", 1)
	if _, diags := compileText(t, bad, extra, Options{Validate: true}); !diags.HasErrors() {
		t.Fatal("validate should still check references")
	}
}

func TestScope(t *testing.T) {
	src := `
locals {
  greeting = "hi"
}
model "fast" {
  provider = "openai"
  name     = "x"
  pricing {
    input_usd_per_mtok  = 0.15
    output_usd_per_mtok = 0.6
  }
}
budget "standard" {
  max_iterations = 12
}
agent "researcher" {
  model  = model.fast
  budget = budget.standard
  loop { mode = "simple" }
}
`
	cfg, diags := compileText(t, src, nil, Options{})
	if diags.HasErrors() {
		t.Fatal(listDiags(diags))
	}
	for expr, want := range map[string]cty.Value{
		`agent.researcher.loop.mode`:            cty.StringVal("simple"),
		`model.fast.pricing.input_usd_per_mtok`: cty.NumberFloatVal(0.15),
		`budget.standard.max_iterations`:        cty.NumberIntVal(12),
		`upper(local.greeting)`:                 cty.StringVal("HI"),
		`agent.researcher.model`:                cty.StringVal("model.fast"),
		`cost(model.fast, 1000000, 0)`:          cty.NumberFloatVal(0.15),
	} {
		v, d := eval.Deferred(plan.Expr{Source: expr}, cfg.Scope.Variables, noEnv)
		if d.HasErrors() {
			t.Errorf("%s: %s", expr, d)
			continue
		}
		if !v.Equals(want).True() {
			t.Errorf("%s = %#v, want %#v", expr, v, want)
		}
	}
}

// The plan is the same whatever the order of files and the directory it was
// compiled in.
func TestPlanIsDeterministic(t *testing.T) {
	a := "model \"m\" {\n  provider = \"scripted\"\n  script = \"s.json\"\n}\n"
	b := "agent \"x\" {\n  model = model.m\n}\nagent \"a\" {\n  model = model.m\n}\n"
	extra := map[string]string{"b.hcl": b, "s.json": "{}"}
	c1, d1 := compileText(t, a, extra, Options{})
	c2, d2 := compileText(t, a, extra, Options{})
	if d1.HasErrors() || d2.HasErrors() {
		t.Fatal(listDiags(append(d1, d2...)))
	}
	j1, _ := plan.Encode(c1.Plan)
	j2, _ := plan.Encode(c2.Plan)
	if string(j1) != string(j2) {
		t.Fatal("two compilations differ")
	}
	if strings.Contains(string(j1), os.TempDir()) {
		t.Fatal("the plan holds an absolute path")
	}
}

func TestParseKeepsExpressionsRaw(t *testing.T) {
	mod, diags := lang.Parse([]lang.Source{{Name: "x.hcl", Bytes: []byte("agent \"a\" {\n  model = model.m\n}\n")}})
	if diags.HasErrors() || len(mod.Blocks) != 1 {
		t.Fatal(diags)
	}
	vars := mod.Blocks[0].Attrs["model"].Expr.Variables()
	if len(vars) != 1 || vars[0].RootName() != "model" {
		t.Fatalf("traversal lost: %#v", vars)
	}
}

func TestLoadPlanFile(t *testing.T) {
	cfg, diags := compileText(t, offline+"agent \"a\" {\n  model = model.m\n}\n", map[string]string{"s.json": "{}"}, Options{})
	if diags.HasErrors() {
		t.Fatal(listDiags(diags))
	}
	js, err := plan.Encode(cfg.Plan)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "plan.json")
	writeFile(t, path, js)
	p, err := LoadPlanFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if p.Agent("agent.a") == nil || p.SourceHash != cfg.Plan.SourceHash {
		t.Fatalf("loaded plan differs: %+v", p)
	}
	writeFile(t, path, []byte(`{"format_version": 99}`))
	if _, err := LoadPlanFile(path); err == nil || !strings.Contains(err.Error(), "format_version 99") {
		t.Fatalf("want a format_version error, got %v", err)
	}
	if _, err := LoadPlanFile(filepath.Join(t.TempDir(), "nope.json")); !os.IsNotExist(err) {
		t.Fatalf("want not-exist, got %v", err)
	}
}
