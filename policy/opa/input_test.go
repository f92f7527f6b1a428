package opa

import (
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/symbi-dev/symbi/plan"

	. "github.com/symbi-dev/symbi/policy"
)

func inputSchema(t testing.TB) *jsonschema.Resolved {
	t.Helper()
	b, err := os.ReadFile("../../docs/schemas/opa-input.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	r, err := s.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// decodeDoc reads a JSON document as the schema library validates it.
func decodeDoc(t testing.TB, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// documentJSON is the input document exactly as OPA sees it.
func documentJSON(t testing.TB, in Input) []byte {
	t.Helper()
	v, err := inputValue(in)
	if err != nil {
		t.Fatal(err)
	}
	x, err := ast.JSON(v)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(x)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestInputDocumentMatchesSchema(t *testing.T) {
	s := inputSchema(t)
	p := testPlan()
	p.Budgets = []plan.Budget{{Address: "budget.b", MaxIterations: 10, MaxCostUSD: 0.5, Timeout: plan.Duration(60e9)}}
	p.Agent("agent.researcher").Budget = "budget.b"
	running := input(p, toolCall("web_search", `{"query":"x","n":2,"deep":{"a":[1,2.5,null]}}`))
	running.Run = RunInfo{ID: "run-1", Iteration: 3, Usage: Usage{ModelCalls: 2, ToolCalls: 1, TotalTokens: 900, CostUSD: 0.001}, Budget: running.Run.Budget}
	samples := map[string]Input{
		"tool_call":   running,
		"no args":     input(p, Action{Type: ToolCall, Tool: "shell"}),
		"delegate":    input(p, Action{Type: Delegate, Target: "critic", Task: "check the answer"}),
		"respond":     input(p, Action{Type: Respond, Content: "42"}),
		"terminate":   input(p, Action{Type: Terminate, Reason: "done"}),
		"nil maps":    {Action: Action{Type: Respond}, Agent: AgentInfo{Name: "a"}},
		"no plan":     NewInput(nil, "agent.x", Action{Type: Respond}, nil),
		"deep agent":  {Action: Action{Type: Terminate}, Agent: AgentInfo{Name: "critic", Model: "fast", DelegationDepth: 2}, Context: map[string]any{"ticket": "JIRA-1", "limits": []any{1.5, "x"}}},
		"tags/effect": input(p, toolCall("shell", `{"cmd":"ls"}`)),
	}
	for name, in := range samples {
		t.Run(name, func(t *testing.T) {
			if err := s.Validate(decodeDoc(t, documentJSON(t, in))); err != nil {
				t.Errorf("%s\n%s", err, documentJSON(t, in))
			}
		})
	}
	if got := string(documentJSON(t, running)); !strings.Contains(got, `"budget":{"max_cost_usd":0.5,"max_iterations":10,"timeout":"1m0s"}`) || !strings.Contains(got, `"effect":"read","tags":["web"]`) {
		t.Errorf("document %s lacks the budget or the plan's effect and tags", got)
	}
	bad := decodeDoc(t, []byte(`{"action":{"type":"tool_call"},"agent":{"name":"a","model":"m","delegation_depth":0},"run":{"id":"","iteration":0,"usage":{},"budget":{}},"context":{}}`))
	if s.Validate(bad) == nil {
		t.Error("a tool_call without a tool and usage without members should not validate")
	}
	// The members an action type needs are required by type, and only by
	// type (the schema's if/then/else, which opa check -s reads too).
	const rest = `"agent":{"name":"a","model":"m","delegation_depth":0},"run":{"id":"","iteration":0,"usage":{"model_calls":0,"tool_calls":0,"prompt_tokens":0,"completion_tokens":0,"total_tokens":0,"cost_usd":0},"budget":{}},"context":{}`
	for action, valid := range map[string]bool{
		`{"type":"tool_call","tool":"x"}`:   true,
		`{"type":"tool_call"}`:              false,
		`{"type":"delegate","target":"c"}`:  true,
		`{"type":"delegate","tool":"x"}`:    false,
		`{"type":"respond"}`:                true,
		`{"type":"terminate","reason":"r"}`: true,
	} {
		if err := s.Validate(decodeDoc(t, []byte(`{"action":`+action+`,`+rest+`}`))); (err == nil) != valid {
			t.Errorf("action %s: valid %v, want %v (%v)", action, err == nil, valid, err)
		}
	}
}

// FuzzInputDocument checks the input document builder against
// encoding/json: whatever an Input holds, OPA sees the same document that
// json.Marshal would write (nil maps as empty objects), or a clear error.
func FuzzInputDocument(f *testing.F) {
	f.Add([]byte(`{"action":{"type":"tool_call","tool":"shell","arguments":{"cmd":"ls","n":1e400}},"agent":{"name":"a"},"run":{"usage":{"cost_usd":0.001},"budget":{"max_total_tokens":100000}},"context":{"k":[1,"x",null,{"y":false}]}}`))
	f.Add([]byte(`{"action":{"type":"respond","content":"\u00e9\u0000"},"run":{"iteration":-3}}`))
	f.Add([]byte(`{"action":{"type":"delegate","target":"c","arguments":"not an object"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var in Input
		if err := json.Unmarshal(data, &in); err != nil {
			return
		}
		v, err := inputValue(in)
		if err != nil {
			return
		}
		if in.Context == nil {
			in.Context = map[string]any{}
		}
		if in.Run.Budget == nil {
			in.Run.Budget = map[string]any{}
		}
		b, err := json.Marshal(in)
		if err != nil {
			t.Fatalf("inputValue accepted what json.Marshal refuses: %v", err)
		}
		want, err := ast.ValueFromReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if ast.Compare(v, want) != 0 {
			t.Fatalf("document differs from its JSON:\n got %v\nwant %v", v, want)
		}
	})
}

// FuzzParseActionDocument: an action ParseAction accepts always builds an
// OPA input document.
func FuzzParseActionDocument(f *testing.F) {
	f.Add([]byte(`{"type":"tool_call","tool":"tool.shell","arguments":{"cmd":"ls"}}`))
	f.Add([]byte(`{"type":"delegate","target":"agent.critic"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := ParseAction(data)
		if err != nil {
			return
		}
		if _, err := inputValue(Input{Action: a}); err != nil {
			t.Fatalf("accepted action %+v does not build a document: %v", a, err)
		}
	})
}

// FuzzDecodeDecision feeds the decoder what a Rego query can return: any
// JSON value, passed through OPA's own value conversion.
func FuzzDecodeDecision(f *testing.F) {
	for _, s := range []string{`true`, `{"decision":"modify","reason":"r","arguments":{"a":[1,2]}}`, `{"decision":"deny"}`, `{"decision":"ask","arguments":null}`, `[{"decision":"allow"}]`, `1.5e300`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		raw, err := decodeJSON(data)
		if err != nil {
			return
		}
		av, err := ast.InterfaceToValue(raw)
		if err != nil {
			return
		}
		v, err := ast.JSON(av)
		if err != nil {
			return
		}
		d, err := DecodeDecision(v)
		if err != nil {
			return
		}
		if !slices.Contains([]Outcome{Allow, Deny, Modify, Ask, NotApplicable}, d.Outcome) {
			t.Fatalf("decoded an invalid outcome %q", d.Outcome)
		}
		if d.Outcome == Modify {
			var obj map[string]any
			if err := json.Unmarshal(d.Arguments, &obj); err != nil || obj == nil {
				t.Fatalf("modify with arguments that are not an object: %s", d.Arguments)
			}
		} else if len(d.Arguments) > 0 {
			t.Fatalf("%s carries arguments", d.Outcome)
		}
	})
}
