package builtins

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/policy"
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

// <, > and & stay themselves, and the same value written with or without
// escapes gives the same key, so cached results and llm_recovery counts do
// not depend on how a model escaped its arguments.
func TestCanonicalJSONKeepsHTMLCharacters(t *testing.T) {
	const want = `{"q":"<a & b>"}`
	for _, in := range []string{
		`{"q":"<a & b>"}`,
		`{ "q" : "\u003ca \u0026 b\u003e" }`,
		`{"q":"\u003Ca & b>"}`,
	} {
		if got := canonicalJSON(json.RawMessage(in)); got != want {
			t.Errorf("canonicalJSON(%s) = %s, want %s", in, got, want)
		}
	}
}

// FuzzValidateArgs checks validateArgs against the schema read by hand
// (an object; q a string of at most 5 characters; n, if there, an
// integer), after the rules validateArgs adds (empty arguments are {}, no
// member named twice), and that the canonical form of accepted arguments is
// the same value and a fixed point.
func FuzzValidateArgs(f *testing.F) {
	s, err := compileSchema(json.RawMessage(`{"type":"object","properties":{"q":{"type":"string","maxLength":5},"n":{"type":"integer"}},"required":["q"]}`))
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{`{"q":"x"}`, `{"q":1}`, `[]`, `{"q":"toolong","n":1.5}`, `{`, ``, `null`,
		`{"q":"héllo","n":1e2}`, `{"q":"x","q":"y"}`, `{"q":"x","o":{"a":1,"a":2}}`, `{"q":"x"} {}`, `{"q":"\ud800"}`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, args string) {
		err := validateArgs(s, json.RawMessage(args))
		if want := argsMatch(args); (err == nil) != want {
			t.Fatalf("validateArgs(%q) = %v; the schema read by hand says valid=%v", args, err, want)
		}
		if err != nil {
			return
		}
		canon := canonicalJSON(json.RawMessage(args))
		if again := canonicalJSON(json.RawMessage(canon)); again != canon {
			t.Fatalf("canonicalJSON(%q) = %q, then %q: not a fixed point", args, canon, again)
		}
		if a, b := decodeNumbers(t, args), decodeNumbers(t, canon); !reflect.DeepEqual(a, b) {
			t.Fatalf("canonicalJSON(%q) = %q, another value", args, canon)
		}
	})
}

// argsMatch is validateArgs for FuzzValidateArgs's schema, by hand.
func argsMatch(args string) bool {
	if strings.TrimSpace(args) == "" {
		return false // {}: q is required
	}
	if !json.Valid([]byte(args)) || hasDuplicateMember(json.NewDecoder(strings.NewReader(args))) {
		return false
	}
	var obj map[string]any
	dec := json.NewDecoder(strings.NewReader(args))
	dec.UseNumber()
	if dec.Decode(&obj) != nil || obj == nil {
		return false
	}
	q, ok := obj["q"].(string)
	if !ok || utf8.RuneCountInString(q) > 5 {
		return false
	}
	if n, ok := obj["n"]; ok {
		num, isNum := n.(json.Number)
		r, isRat := new(big.Rat).SetString(string(num))
		return isNum && isRat && r.IsInt()
	}
	return true
}

// hasDuplicateMember reads one JSON value from dec and reports whether an
// object in it names a member twice.
func hasDuplicateMember(dec *json.Decoder) bool {
	tok, err := dec.Token()
	if err != nil {
		return false
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]bool{}
		for dec.More() {
			k, _ := dec.Token()
			key, _ := k.(string)
			if seen[key] || hasDuplicateMember(dec) {
				return true
			}
			seen[key] = true
		}
		dec.Token()
	case json.Delim('['):
		for dec.More() {
			if hasDuplicateMember(dec) {
				return true
			}
		}
		dec.Token()
	}
	return false
}

func decodeNumbers(t *testing.T, s string) any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return v
}

// Call skips re-validating only arguments byte-identical to ones Validate
// accepted for the same tool; anything else is checked again, so invalid
// arguments never reach an executor.
func TestCallValidatesWhatValidateDidNotSee(t *testing.T) {
	tb := newToolbox(t, []plan.Tool{builtinTool("calculator"), builtinTool("clock")}, nil, Options{})
	ctx := context.Background()
	gate := func(tool, args string) policy.Approved {
		// A chain without a validator approves whatever it is given, as a
		// policy's modify could hand over arguments Validate never saw.
		a := policy.Action{Type: policy.ToolCall, Tool: tool, Arguments: json.RawMessage(args)}
		v := allowAll(t, nil).Gate(ctx, policy.Input{Action: a})
		if !v.Approved.Valid() {
			t.Fatalf("not approved: %+v", v.Decision)
		}
		return v.Approved
	}
	if err := tb.Validate("calculator", json.RawMessage(`{"expression":"1+1"}`)); err != nil {
		t.Fatal(err)
	}
	// Validated, then different (invalid) bytes approved: checked again.
	_, err := tb.Call(ctx, gate("calculator", `{"expr":"1+1"}`))
	wantKind(t, err, InvalidArguments)
	// Never validated at all.
	_, err = tb.Call(ctx, gate("calculator", `{"expression":7}`))
	wantKind(t, err, InvalidArguments)
	// What Validate accepted for one tool says nothing of another.
	if err := tb.Validate("clock", json.RawMessage(`{"timezone":"UTC"}`)); err != nil {
		t.Fatal(err)
	}
	_, err = tb.Call(ctx, gate("calculator", `{"timezone":"UTC"}`))
	wantKind(t, err, InvalidArguments)
	// The validated bytes run, and the entry is spent by that call.
	r, err := tb.Call(ctx, gate("calculator", `{"expression":"1+1"}`))
	if err != nil || r.Content != "2" {
		t.Fatalf("calculator: %q %v", r.Content, err)
	}
	if tb.validated.take("calculator", json.RawMessage(`{"expression":"1+1"}`)) {
		t.Error("the validated entry was not consumed by the call")
	}
}

func TestValidatedArgsStaysBounded(t *testing.T) {
	var v validatedArgs
	for i := range 3 * maxValidated {
		v.add("t", json.RawMessage(fmt.Sprintf(`{"i":%d}`, i)))
	}
	if n := len(v.seen); n > maxValidated {
		t.Errorf("%d entries kept", n)
	}
	if v.take("t", json.RawMessage(`{"i":0}`)) {
		t.Error("an entry from before the clear survived")
	}
}

// A member named twice is refused before the gate: the gate's reader and
// the tool's could take different values.
func TestDuplicateMembersAreRefused(t *testing.T) {
	for args, path := range map[string]string{
		`{"cmd":"ls","cmd":"rm -rf /"}`:             `"cmd"`,
		`{"a":{"b":1,"c":2,"b":3}}`:                 `"a.b"`,
		`{"a":[{"x":1},{"x":1,"y":2,"x":3}]}`:       `"a[1].x"`,
		`{"a":1,"b":{"a":2},"c":[{"a":3},{"a":4}]}`: "",
	} {
		got, dup := duplicateMember([]byte(args))
		if got != path || dup != (path != "") {
			t.Errorf("duplicateMember(%s) = %s, %v; want %s", args, got, dup, path)
		}
		err := validateArgs(nil, json.RawMessage(args))
		if (err != nil) != (path != "") || (err != nil && !strings.Contains(err.Error(), path)) {
			t.Errorf("validateArgs(%s) = %v", args, err)
		}
	}
}
