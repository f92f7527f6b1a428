package opa

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/symbi-dev/symbi/plan"

	. "github.com/symbi-dev/symbi/policy"
)

const gateRego = `package symbi.gate

# Every kind of decision, keyed on the tool, so one module tests them all.
default decision := {"decision": "not_applicable"}

decision := {"decision": "allow", "reason": "searching is fine"} if input.action.tool == "web_search"

decision := {"decision": "deny", "reason": sprintf("%s is too expensive", [input.action.tool])} if {
	input.action.tool == "shell"
	input.run.usage.cost_usd > data.limits.max_cost_usd
}

decision := {"decision": "modify", "reason": "capped", "arguments": object.union(input.action.arguments, {"limit": 10})} if {
	input.action.tool == "shell"
	input.run.usage.cost_usd <= data.limits.max_cost_usd
}

decision := {"decision": "ask", "reason": "writes need a person"} if input.action.effect == "write"

allowed if input.context.env == "test"

broken := {"decision": "maybe"}

default strict := {"decision": "not_applicable"}

strict := {"decision": "deny", "reason": "too big"} if to_number(input.action.arguments.size) > 10

conflict := 1 if input.action.tool == "web_search"

conflict := 2 if input.action.tool == "web_search"
`

func opaPlan(t *testing.T, query string) *plan.Plan {
	t.Helper()
	pol := opaPolicy("policy.rego", query, file("policies/gate.rego", gateRego))
	data := file("policies/data.json", `{"limits": {"max_cost_usd": 0.5}}`)
	pol.OPA.Data = &data
	return testPlan(pol)
}

func TestOPADecisions(t *testing.T) {
	p := opaPlan(t, "data.symbi.gate.decision")
	g := mustGate(t, p, "policy.rego")
	expensive := input(p, toolCall("shell", `{"cmd":"ls"}`))
	expensive.Run.Usage.CostUSD = 0.75
	for _, tc := range []struct {
		name   string
		in     Input
		want   Outcome
		reason string
		args   string
	}{
		{"allow", input(p, toolCall("web_search", `{"query":"x"}`)), Allow, "searching is fine", ""},
		{"deny using data and usage", expensive, Deny, "shell is too expensive", ""},
		{"modify", input(p, toolCall("shell", `{"cmd":"ls"}`)), Modify, "capped", `{"cmd":"ls","limit":10}`},
		{"ask using the plan's effect", input(p, toolCall("write_file", `{}`)), Ask, "writes need a person", ""},
		{"not applicable", input(p, Action{Type: Respond, Content: "hi"}), NotApplicable, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := g.Decide(context.Background(), tc.in)
			if d.Outcome != tc.want || d.Reason != tc.reason || d.Engine != "opa" {
				t.Fatalf("got %s %q (%s), want %s %q", d.Outcome, d.Reason, d.Engine, tc.want, tc.reason)
			}
			if tc.args != "" && !jsonEqual(t, d.Arguments, tc.args) {
				t.Errorf("arguments %s, want %s", d.Arguments, tc.args)
			}
		})
	}
}

func jsonEqual(t *testing.T, a json.RawMessage, b string) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(b), &y); err != nil {
		t.Fatal(err)
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return string(xb) == string(yb)
}

func TestOPABooleanAndFailClosed(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		query  string
		in     Action
		env    string
		want   Outcome
		reason string
	}{
		{"data.symbi.gate.allowed", toolCall("web_search", `{}`), "test", Allow, ""},
		{"data.symbi.gate.allowed", toolCall("web_search", `{}`), "prod", Deny, "undefined"},
		{"data.symbi.gate.broken", toolCall("web_search", `{}`), "test", Deny, `decision "maybe" is not one of`},
		{"data.symbi.gate.conflict", toolCall("web_search", `{}`), "test", Deny, "conflict"},
		{"data.limits", toolCall("web_search", `{}`), "test", Deny, "unknown member"},
		{"data.symbi.gate.strict", toolCall("web_search", `{"size":"3"}`), "test", NotApplicable, ""},
		{"data.symbi.gate.strict", toolCall("web_search", `{"size":"huge"}`), "test", Deny, "to_number"},
	} {
		t.Run(tc.query+"/"+tc.env, func(t *testing.T) {
			p := opaPlan(t, tc.query)
			g := mustGate(t, p, "policy.rego")
			in := input(p, tc.in)
			in.Context["env"] = tc.env
			d := g.Decide(ctx, in)
			if d.Outcome != tc.want || !strings.Contains(d.Reason, tc.reason) {
				t.Errorf("got %s %q, want %s containing %q", d.Outcome, d.Reason, tc.want, tc.reason)
			}
		})
	}
}

func TestOPACancelledContextDenies(t *testing.T) {
	p := opaPlan(t, "data.symbi.gate.decision")
	g := mustGate(t, p, "policy.rego")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if d := g.Decide(ctx, input(p, toolCall("web_search", `{}`))); d.Outcome != Deny {
		t.Errorf("cancelled: got %s %q, want deny", d.Outcome, d.Reason)
	}
}

func TestOPALoadErrors(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		pol    plan.Policy
		want   string
		wantIs error
	}{
		{
			"parse error names file and line",
			opaPolicy("policy.rego", "data.x.allow", file("policies/tools.rego", "package x\n\nallow if {\n  input.a ==\n}\n")),
			"policies/tools.rego:5: rego_parse_error:", nil,
		},
		{
			"compile error names file and line",
			opaPolicy("policy.rego", "data.x.allow", file("policies/tools.rego", "package x\n\nallow if {\n  undefined_fn(1)\n}\n")),
			"policies/tools.rego:4: rego_type_error: undefined function undefined_fn", nil,
		},
		{
			"undefined query",
			opaPolicy("policy.rego", "data.x.decision", file("policies/tools.rego", "package x\n\nallow := true\n")),
			"data.x.decision is defined by no rule", ErrUndefinedQuery,
		},
		{
			"query that is not a data reference",
			opaPolicy("policy.rego", "input.x", file("policies/tools.rego", "package x\n")),
			"not a reference into data", nil,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := FromPlan(ctx, testPlan(tc.pol), "policy.rego", t.TempDir())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
			var le *LoadError
			if !errors.As(err, &le) {
				t.Errorf("%v is not a *LoadError", err)
			}
			if tc.wantIs != nil && !errors.Is(err, tc.wantIs) {
				t.Errorf("%v is not %v", err, tc.wantIs)
			}
		})
	}
}

func TestOPADataErrorAndFileOnDisk(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "policies"), 0o755); err != nil {
		t.Fatal(err)
	}
	big := "package x\n\n# " + strings.Repeat("padding ", plan.MaxInlineText/8) + "\nallow := true\n"
	if err := os.WriteFile(filepath.Join(dir, "policies/x.rego"), []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	mod := plan.NewFileRef("policies/x.rego", []byte(big))
	if mod.Text != "" {
		t.Fatal("the module should be too large to inline")
	}
	data := file("policies/data.json", "{\n  \"a\": 1,\n  oops\n}")
	pol := opaPolicy("policy.rego", "data.x.allow", mod)
	pol.OPA.Data = &data
	_, err := FromPlan(context.Background(), testPlan(pol), "policy.rego", dir)
	if err == nil || !strings.Contains(err.Error(), "policies/data.json:3:") {
		t.Fatalf("got %v, want an error at policies/data.json:3", err)
	}
	pol.OPA.Data = nil
	g, err := FromPlan(context.Background(), testPlan(pol), "policy.rego", dir)
	if err != nil {
		t.Fatal(err)
	}
	if d := g.Decide(context.Background(), input(testPlan(), toolCall("x", `{}`))); d.Outcome != Allow {
		t.Errorf("got %s %q, want allow", d.Outcome, d.Reason)
	}
	// A module changed after the plan was made is refused, not run.
	if err := os.WriteFile(filepath.Join(dir, "policies/x.rego"), []byte(big+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := FromPlan(context.Background(), testPlan(pol), "policy.rego", dir); err == nil || !strings.Contains(err.Error(), "changed since the plan was made") {
		t.Errorf("got %v, want a changed-file error", err)
	}
}

func TestOPAExplain(t *testing.T) {
	p := opaPlan(t, "data.symbi.gate.decision")
	g := mustGate(t, p, "policy.rego")
	d, trace := Explain(context.Background(), g, input(p, toolCall("web_search", `{}`)))
	if d.Outcome != Allow {
		t.Fatalf("got %s", d.Outcome)
	}
	for _, want := range []string{"Enter data.symbi.gate.decision", "policies/gate.rego"} {
		if !strings.Contains(trace, want) {
			t.Errorf("trace lacks %q:\n%s", want, trace)
		}
	}
	// The first line is the input document as OPA saw it, to replay with
	// opa eval -i.
	first, _, _ := strings.Cut(trace, "\n")
	doc, ok := strings.CutPrefix(first, "input: ")
	if !ok {
		t.Fatalf("explanation does not start with the input: %q", first)
	}
	if want := string(documentJSON(t, input(p, toolCall("web_search", `{}`)))); doc != want {
		t.Errorf("input line\n %s\nwant\n %s", doc, want)
	}
}
