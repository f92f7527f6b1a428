package policy

import (
	"bytes"
	"encoding/json"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/symbi-dev/symbi/plan"
)

func inputSchema(t testing.TB) *jsonschema.Resolved {
	t.Helper()
	b, err := os.ReadFile("../docs/schemas/opa-input.schema.json")
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

func TestParseAction(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Action
		err  string
	}{
		{`{"type":"tool_call","tool":"tool.shell","arguments":{"cmd":"ls"}}`, Action{Type: ToolCall, Tool: "shell", Arguments: json.RawMessage(`{"cmd":"ls"}`)}, ""},
		{`{"tool":"shell"}`, Action{Type: ToolCall, Tool: "shell"}, ""},
		{`{"type":"delegate","target":"agent.critic","task":"x"}`, Action{Type: Delegate, Target: "critic", Task: "x"}, ""},
		{`{"type":"respond","content":"hi"}`, Action{Type: Respond, Content: "hi"}, ""},
		{`{"type":"fly"}`, Action{}, `unknown type "fly"`},
		{`{"type":"tool_call"}`, Action{}, "needs a tool"},
		{`{"type":"delegate"}`, Action{}, "needs a target"},
		{`{"tool":"x","arguments":[1]}`, Action{}, "want a JSON object, got an array"},
		{`{"tool":"x","bogus":1}`, Action{}, "unknown field"},
		{`{"tool":"x"} {}`, Action{}, "invalid character '{' after top-level value, at offset 14"},
		{`nope`, Action{}, "not valid JSON: invalid character 'o' in literal null (expecting 'u'), at offset 2 (line 1, column 2)"},
		{`{not json`, Action{}, "not valid JSON: invalid character 'n' looking for beginning of object key string, at offset 2 (line 1, column 2)"},
		{"{\n  \"tool\": \"x\",\n  \"arguments\": {\"a\": 1\n}", Action{}, "not valid JSON: unexpected end of JSON input, at offset 41 (line 4, column 1)"},
	} {
		got, err := ParseAction([]byte(tc.in))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseAction(%s): got %v, want an error containing %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got.Type != tc.want.Type || got.Tool != tc.want.Tool || got.Target != tc.want.Target || string(got.Arguments) != string(tc.want.Arguments) {
			t.Errorf("ParseAction(%s) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
}

func TestDecodeDecision(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Outcome
		err  string
	}{
		{`true`, Allow, ""},
		{`false`, Deny, ""},
		{`{"decision":"allow","reason":"ok"}`, Allow, ""},
		{`{"decision":"deny","reason":"no"}`, Deny, ""},
		{`{"decision":"ask"}`, Ask, ""},
		{`{"decision":"not_applicable"}`, NotApplicable, ""},
		{`{"decision":"modify","arguments":{"a":1}}`, Modify, ""},
		{`{"decision":"modify"}`, "", "gives no arguments"},
		{`{"decision":"allow","arguments":{}}`, "", "only modify may change them"},
		{`{"decision":"modify","arguments":[1]}`, "", "want an object"},
		{`{"decision":"yes"}`, "", `"yes" is not one of`},
		{`{"decision":1}`, "", "want a string"},
		{`{"reason":"x"}`, "", "no decision member"},
		{`{"decision":"deny","reason":5}`, "", "reason is a number"},
		{`{"decision":"deny","why":"x"}`, "", `unknown member "why"`},
		{`"allow"`, "", "returned a string"},
		{`null`, "", "returned null"},
		{`[true]`, "", "returned an array"},
	} {
		v, err := decodeJSON([]byte(tc.in))
		if err != nil {
			t.Fatal(err)
		}
		d, err := decodeDecision(v)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("decode %s: got %+v %v, want error %q", tc.in, d, err, tc.err)
			}
			continue
		}
		if err != nil || d.Outcome != tc.want {
			t.Errorf("decode %s: got %+v %v, want %s", tc.in, d, err, tc.want)
		}
	}
}

// TestInvalidJSON: nil for JSON, and where reading failed for anything
// else, counted in bytes from 1, and as line and column (in characters).
func TestInvalidJSON(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"a":1}`, ""},
		{` "s" `, ""},
		{`{not json`, "not valid JSON: invalid character 'n' looking for beginning of object key string, at offset 2 (line 1, column 2)"},
		{`{"é":1,}`, "not valid JSON: invalid character '}' looking for beginning of object key string, at offset 9 (line 1, column 8)"},
		{"[1,\n2,\n]", "not valid JSON: invalid character ']' looking for beginning of value, at offset 8 (line 3, column 1)"},
		{`{"a":1} x`, "not valid JSON: invalid character 'x' after top-level value, at offset 9 (line 1, column 9)"},
		{``, "not valid JSON: the text is empty"},
		{"  \n", "not valid JSON: the text is empty"},
	} {
		err := InvalidJSON([]byte(tc.in))
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("InvalidJSON(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// FuzzInvalidJSON holds InvalidJSON to encoding/json: nil exactly for
// valid JSON, and otherwise an offset inside the text whose line is one
// more than the newlines before it.
func FuzzInvalidJSON(f *testing.F) {
	for _, s := range []string{`{not json`, `{"a":[1,2}`, "{\n\"a\":\n", `"\u12"`, `{"a":1}`, ``} {
		f.Add([]byte(s))
	}
	re := regexp.MustCompile(`at offset (\d+) \(line (\d+), column (\d+)\)$`)
	f.Fuzz(func(t *testing.T, in []byte) {
		err := InvalidJSON(in)
		if (err == nil) != json.Valid(in) {
			t.Fatalf("InvalidJSON(%q) = %v, but json.Valid says %v", in, err, json.Valid(in))
		}
		if err == nil || len(bytes.TrimSpace(in)) == 0 {
			return
		}
		m := re.FindStringSubmatch(err.Error())
		if m == nil {
			t.Fatalf("InvalidJSON(%q) = %q: no offset", in, err)
		}
		off, _ := strconv.Atoi(m[1])
		line, _ := strconv.Atoi(m[2])
		if off < 1 || off > len(in) {
			t.Fatalf("InvalidJSON(%q): offset %d outside 1..%d", in, off, len(in))
		}
		if want := 1 + bytes.Count(in[:off-1], []byte("\n")); line != want {
			t.Fatalf("InvalidJSON(%q): line %d, want %d", in, line, want)
		}
	})
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

// FuzzParseAction: any bytes give an action or an error, and an accepted
// action always builds a document.
func FuzzParseAction(f *testing.F) {
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
		if _, _, err := a.subject(); err != nil {
			t.Fatalf("accepted action %+v has no subject: %v", a, err)
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
		d, err := decodeDecision(v)
		if err != nil {
			return
		}
		if !d.Outcome.valid() {
			t.Fatalf("decoded an invalid outcome %q", d.Outcome)
		}
		if d.Outcome == Modify {
			if _, err := argumentsObject(d.Arguments); err != nil {
				t.Fatalf("modify with arguments that are not an object: %s", d.Arguments)
			}
		} else if len(d.Arguments) > 0 {
			t.Fatalf("%s carries arguments", d.Outcome)
		}
	})
}
