package interp

import (
	"bytes"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/symbi-dev/symbi/plan"
)

// TestSensitiveValueNeverInPlan gives a sensitive variable a value and uses
// it where the plan would hold it: compile refuses with a diagnostic that
// names the variable and points at the use, in plan and validate alike, and
// the value is nowhere in what was built.
func TestSensitiveValueNeverInPlan(t *testing.T) {
	const secret = "pin-8c1f0e7a"
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.hcl"), []byte(`variable "pin" {
  type      = string
  sensitive = true
}

variable "region" {
  type      = string
  sensitive = true
  default   = "eu"
}

locals {
  both = "${var.region}:${var.pin}"
}

tool "show" {
  description = "Shows the pin"
  command {
    argv = ["./show.sh"]
    env  = { PIN = var.pin, BOTH = local.both }
  }
}
`))
	for _, validate := range []bool{false, true} {
		opts := Options{Vars: map[string]string{"pin": secret}, LookupEnv: noEnv, Validate: validate}
		if validate {
			opts.Vars = nil // an unknown value is as sensitive as a known one
		}
		cfg, diags := Compile(dir, opts)
		var details []string
		for _, d := range diags {
			if d.Summary == "Sensitive value in the plan" {
				details = append(details, d.Detail)
				if d.Subject == nil || d.Subject.Start.Line != 20 {
					t.Errorf("validate=%v: diagnostic at %v, want main.hcl line 20", validate, d.Subject)
				}
			}
		}
		want := []string{
			`sensitive value cannot be stored in the plan: var.pin and var.region are sensitive; read secrets at run time with env("NAME") instead.`,
			`sensitive value cannot be stored in the plan: var.pin is sensitive; read secrets at run time with env("NAME") instead.`,
		}
		if strings.Join(sorted(details), "\n") != strings.Join(want, "\n") {
			t.Errorf("validate=%v: details\n%s\nwant\n%s", validate, strings.Join(sorted(details), "\n"), strings.Join(want, "\n"))
		}
		js, err := plan.Encode(cfg.Plan)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(js, []byte(secret)) {
			t.Errorf("validate=%v: the plan holds the sensitive value:\n%s", validate, js)
		}
		for _, v := range cfg.Plan.Variables {
			if v.Name == "region" && (!v.Sensitive || v.Value != nil) {
				t.Errorf("plan.Variable %s: sensitive %v, value %s; want sensitive without a value", v.Name, v.Sensitive, v.Value)
			}
		}
	}
}

// TestSensitiveValueInScope keeps a sensitive variable's value out of the
// plan but in the REPL's scope, marked, so that what is derived from it can
// be recognised there too.
func TestSensitiveValueInScope(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.hcl"), []byte(`variable "pin" {
  sensitive = true
  default   = "1234"
}

locals {
  shown = "pin ${var.pin}"
}
`))
	cfg, diags := Compile(dir, Options{LookupEnv: noEnv})
	if diags.HasErrors() {
		t.Fatalf("a sensitive value used only in a local is fine:\n%s", formatDiags(diags))
	}
	local := cfg.Scope.Variables["local"].GetAttr("shown")
	if !local.HasMark(sensitive{variable: "pin"}) {
		t.Errorf("local.shown is %#v, want it marked as derived from var.pin", local)
	}
	if v, _ := local.Unmark(); v.AsString() != "pin 1234" {
		t.Errorf("local.shown = %q", v.AsString())
	}
}

func sorted(list []string) []string {
	out := append([]string(nil), list...)
	sort.Strings(out)
	return out
}
