package interp

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

const valuesConfig = `
variable "topics" {
  type = list(string)
}

variable "limit" {
  type    = number
  default = 1
}

model "m" {
  provider = "scripted"
  script   = "s.json"
}

agent "a" {
  model  = model.m
  system = "Topics: ${join(", ", var.topics)}; limit ${var.limit}"
}
`

func writeConfig(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestTestFilesAreNotConfiguration: a directory's configuration leaves its
// *.symbitest.hcl files out; they are not valid configuration.
func TestTestFilesAreNotConfiguration(t *testing.T) {
	dir := writeConfig(t, map[string]string{
		"main.hcl":           strings.Replace(valuesConfig, "type = list(string)", "type    = list(string)\n  default = []", 1),
		"s.json":             `{"turns":[{"content":"x"}]}`,
		"main.symbitest.hcl": "run \"a\" {\n  input = \"x\"\n}\n",
	})
	cfg, diags := Compile(dir, Options{})
	if diags.HasErrors() {
		t.Fatalf("a directory with a test file: %s", diags.Error())
	}
	for name := range cfg.Files {
		if strings.HasSuffix(name, ".symbitest.hcl") {
			t.Errorf("the test file %s was read as configuration", name)
		}
	}
	only := writeConfig(t, map[string]string{"main.symbitest.hcl": "run \"a\" {}\n"})
	_, diags = Compile(only, Options{})
	if !diags.HasErrors() || !strings.Contains(diags.Error(), "no *.hcl files but test files") {
		t.Errorf("a directory of test files only: %v", diags)
	}
}

// TestValues: values given as values (a test file's variables) are
// converted to the declared type, lose to --var and win over defaults; a
// wrong one is diagnosed at the range it came from.
func TestValues(t *testing.T) {
	dir := writeConfig(t, map[string]string{"main.hcl": valuesConfig, "s.json": `{"turns":[{"content":"x"}]}`})
	at := hcl.Range{Filename: "t.symbitest.hcl", Start: hcl.Pos{Line: 3, Column: 5, Byte: 20}, End: hcl.Pos{Line: 3, Column: 9, Byte: 24}}
	cfg, diags := Compile(dir, Options{
		Values: map[string]Value{
			"topics": {Value: cty.TupleVal([]cty.Value{cty.StringVal("otters"), cty.StringVal("seals")}), Range: at},
			"limit":  {Value: cty.NumberIntVal(5), Range: at},
		},
		Vars: map[string]string{"limit": "7"},
	})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	if got := cfg.Plan.Agents[0].System; got != "Topics: otters, seals; limit 7" {
		t.Errorf("system %q", got)
	}

	_, diags = Compile(dir, Options{Values: map[string]Value{
		"topics": {Value: cty.StringVal("otters"), Range: at},
		"limt":   {Value: cty.NumberIntVal(1), Range: at},
	}})
	var summaries []string
	for _, d := range diags {
		summaries = append(summaries, d.Summary)
		if d.Subject == nil || d.Subject.Filename != "t.symbitest.hcl" {
			t.Errorf("%q is not diagnosed where the value was written: %v", d.Summary, d.Subject)
		}
	}
	want := []string{"Value for undeclared variable", "Invalid value for variable"}
	if strings.Join(summaries, "; ") != strings.Join(want, "; ") || !strings.Contains(diags[0].Detail, `Did you mean "limit"?`) {
		t.Errorf("diagnostics %v, want %v", summaries, want)
	}
}
