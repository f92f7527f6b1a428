package builtins

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/symbi-dev/symbi/plan"
)

func TestCompileSchema(t *testing.T) {
	good := []string{
		``,
		`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`,
		`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object"}`,
	}
	for _, s := range good {
		if err := CompileSchema(json.RawMessage(s)); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
	bad := map[string]string{
		`{"type":"objekt"}`:                      "not a valid JSON Schema",
		`{"type":"object",`:                      "not JSON",
		`{"properties":{"a":{"minLength":"x"}}}`: "not a valid JSON Schema",
	}
	for s, msg := range bad {
		err := CompileSchema(json.RawMessage(s))
		if err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: error %v, want %q", s, err, msg)
		}
	}
}

func TestValidate(t *testing.T) {
	tool := plan.Tool{
		Address:    "tool.search",
		Parameters: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"},"limit":{"type":"integer","maximum":10}},"required":["query"],"additionalProperties":false}`),
		Executor:   plan.Executor{Kind: "builtin", Builtin: "calculator"},
	}
	tb := newToolbox(t, []plan.Tool{tool, builtinTool("calculator")}, nil, Options{})
	if err := tb.Validate("search", json.RawMessage(`{"query":"x","limit":3}`)); err != nil {
		t.Fatalf("valid arguments: %v", err)
	}
	cases := map[string][]string{
		`{"query":7}`:                {"invalid_arguments", "'/query'", "want string"},
		`{"limit":3}`:                {"missing propert", "query"},
		`{"query":"x","limit":11}`:   {"'/limit'", "10"},
		`{"query":"x","extra":true}`: {"extra"},
		`[1,2]`:                      {"must be a JSON object, got array"},
		`{"query":`:                  {"not valid JSON"},
	}
	for args, wants := range cases {
		err := tb.Validate("search", json.RawMessage(args))
		f := wantKind(t, err, InvalidArguments)
		for _, w := range wants {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not mention %q", args, err, w)
			}
		}
		if f.Tool != "search" {
			t.Errorf("Tool = %q", f.Tool)
		}
	}
	err := tb.Validate("serach", json.RawMessage(`{}`))
	wantKind(t, err, InvalidArguments)
	if !errors.Is(err, ErrUnknownTool) || !strings.Contains(err.Error(), "available: search, calculator") {
		t.Errorf("unknown tool error %q", err)
	}
	// An empty argument list is the empty object.
	if err := tb.Validate("calculator", nil); err == nil || !strings.Contains(err.Error(), "expression") {
		t.Errorf("calculator without expression: %v", err)
	}
}

func TestCanonicalJSON(t *testing.T) {
	a := canonicalJSON(json.RawMessage(`{"b": 1, "a": [1, 2.50, "x"]}`))
	b := canonicalJSON(json.RawMessage(`{"a":[1,2.50,"x"],"b":1}`))
	if a != b || a != `{"a":[1,2.50,"x"],"b":1}` {
		t.Errorf("canonical forms differ: %s vs %s", a, b)
	}
	if canonicalJSON(nil) != "{}" {
		t.Error("empty arguments are {}")
	}
}

func FuzzValidateArgs(f *testing.F) {
	s, err := compileSchema(json.RawMessage(`{"type":"object","properties":{"q":{"type":"string","maxLength":5},"n":{"type":"integer"}},"required":["q"]}`))
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{`{"q":"x"}`, `{"q":1}`, `[]`, `{"q":"toolong","n":1.5}`, `{`, ``, `null`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, args string) {
		err := validateArgs(s, json.RawMessage(args))
		_ = canonicalJSON(json.RawMessage(args))
		if err == nil && !json.Valid([]byte(args)) && strings.TrimSpace(args) != "" {
			t.Errorf("invalid JSON %q accepted", args)
		}
	})
}
