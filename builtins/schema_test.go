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
		`true`,
		`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`,
		`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object"}`,
		`{"$schema":"https://json-schema.org/draft-07/schema","type":"object"}`,
		`{"$schema":"https://json-schema.org/draft/2020-12/schema#","type":"object"}`,
		`{"$schema":"http://json-schema.org/draft-04/schema#","properties":{"n":{"maximum":3,"exclusiveMaximum":true}}}`,
		`{"$schema":"http://json-schema.org/draft-06/schema#","properties":{"n":{"exclusiveMaximum":3}}}`,
		`{"$schema":"https://json-schema.org/draft/2019-09/schema","properties":{"p":{"items":[{"type":"string"}],"additionalItems":false}}}`,
		`{"type":"object","x-vendor":{"anything":true},"properties":{"q":{"type":["string","null"]}}}`,
		`{"$defs":{"s":{"type":"string"}},"properties":{"q":{"$ref":"#/$defs/s"}}}`,
		// Recursion that descends into the value ends with it.
		`{"properties":{"a":{"$ref":"#"}}}`,
		`{"$defs":{"n":{"type":"object","properties":{"c":{"$ref":"#/$defs/n"}}}},"$ref":"#/$defs/n"}`,
		`{"$schema":"http://json-schema.org/draft-07/schema#","definitions":{"a":{"$ref":"#/definitions/b","allOf":[{"$ref":"#/definitions/a"}]},"b":{"type":"string"}}}`,
	}
	for _, s := range good {
		if err := CompileSchema(json.RawMessage(s)); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
	bad := map[string]string{
		`{"type":"objekt"}`:                                    `not a valid JSON Schema: at the root: type "objekt" is not one of`,
		`{"type":"object",`:                                    "not JSON",
		`{"properties":{"a":{"minLength":"x"}}}`:               "not a valid JSON Schema",
		`{"properties":{"a":{"type":"strnig"}}}`:               `at /properties/a: type "strnig"`,
		`{"properties":{"a":{"minLength":-1}}}`:                "minLength is -1, which is negative",
		`{"type":["string","string"]}`:                         `type lists "string" twice`,
		`{"type":[]}`:                                          "type is an empty list",
		`{"multipleOf":0}`:                                     "multipleOf is 0; it must be greater than 0",
		`{"required":["a","a"]}`:                               `required lists "a" twice`,
		`{"items":[{"type":"string"}]}`:                        "an array of schemas is prefixItems",
		`{"properties":{"a":5}}`:                               "not a valid JSON Schema",
		`{"pattern":"("}`:                                      "missing closing )",
		`{"$ref":"#/$defs/missing"}`:                           "not a valid JSON Schema",
		`{"$ref":"https://example.com/schema.json"}`:           "cannot resolve remote schemas",
		`{"$schema":"https://example.com/my-dialect"}`:         `$schema "https://example.com/my-dialect" is not a dialect symbi validates`,
		`{"$schema":"http://json-schema.org/draft-03/schema"}`: "is not a dialect symbi validates",
		`{"$schema":7}`:                                        "$schema is not a string",
		`{"$schema":"https://json-schema.org/draft/2019-09/schema","$recursiveAnchor":true}`:                                "$recursiveAnchor (2019-09) is not supported",
		`{"$defs":{"a":{"$id":"https://x.example/a","$schema":"http://json-schema.org/draft-07/schema#"}}}`:                 "inside a schema of another draft",
		`{"$schema":"http://json-schema.org/draft-04/schema#","not":{"$schema":"http://json-schema.org/draft-07/schema#"}}`: "inside a schema of another draft",
		// References that lead back to the same value without descending:
		// validation would recurse until the stack overflows.
		`{"$ref":"#"}`:             "at the root applies itself to the same value",
		`{"allOf":[{"$ref":"#"}]}`: "applies itself to the same value",
		`{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"anyOf":[{"$ref":"#/$defs/a"}]}},"properties":{"x":{"$ref":"#/$defs/a"}}}`:  "applies itself to the same value",
		`{"$defs":{"a":{"$anchor":"x","not":{"$ref":"#x"}}}}`:                                                                "at /$defs/a applies itself",
		`{"$id":"https://x.example/root","$defs":{"a":{"$id":"a.json","if":{"$ref":"https://x.example/a.json"}}}}`:           "applies itself to the same value",
		`{"$schema":"http://json-schema.org/draft-07/schema#","definitions":{"a":{"$id":"#foo","allOf":[{"$ref":"#foo"}]}}}`: "applies itself to the same value",
		`{"$dynamicAnchor":"m","oneOf":[{"$dynamicRef":"#m"}]}`:                                                              "applies itself to the same value",
		`{"$schema":"https://json-schema.org/draft/2019-09/schema","dependentSchemas":{"a":{"$ref":"#"}}}`:                   "applies itself to the same value",
	}
	for s, msg := range bad {
		err := CompileSchema(json.RawMessage(s))
		if err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: error %v, want %q", s, err, msg)
		}
	}
}

// Schemas written for draft-04, draft-06 and 2019-09 validate as their own
// draft does, through the rewrite into draft-07 or 2020-12.
func TestSchemaDrafts(t *testing.T) {
	const (
		d4   = `"$schema":"http://json-schema.org/draft-04/schema#",`
		d6   = `"$schema":"http://json-schema.org/draft-06/schema#",`
		d19  = `"$schema":"https://json-schema.org/draft/2019-09/schema",`
		none = ``
	)
	for _, tc := range []struct {
		schema string
		valid  []string
		wrong  []string
	}{
		{`{` + d4 + `"properties":{"n":{"maximum":10,"exclusiveMaximum":true,"minimum":1,"exclusiveMinimum":false}}}`,
			[]string{`{"n":9.5}`, `{"n":1}`}, []string{`{"n":10}`, `{"n":0}`}},
		{`{` + d4 + `"properties":{"n":{"minimum":1,"exclusiveMinimum":true}}}`,
			[]string{`{"n":1.5}`}, []string{`{"n":1}`}},
		// draft-04's id is draft-07's $id: a plain name inside properties is left alone.
		{`{` + d4 + `"id":"https://x.example/s.json","properties":{"id":{"type":"string"}},"required":["id"]}`,
			[]string{`{"id":"a"}`}, []string{`{"id":1}`, `{}`}},
		{`{` + d6 + `"properties":{"n":{"exclusiveMaximum":10},"c":{"const":"x"}}}`,
			[]string{`{"n":9,"c":"x"}`}, []string{`{"n":10}`, `{"c":"y"}`}},
		{`{` + d19 + `"properties":{"p":{"items":[{"type":"string"},{"type":"integer"}],"additionalItems":false}}}`,
			[]string{`{"p":["a",1]}`, `{"p":["a"]}`}, []string{`{"p":["a",1,2]}`, `{"p":[1]}`}},
		{`{` + d19 + `"properties":{"p":{"items":[{"type":"string"}],"additionalItems":{"type":"boolean"}}}}`,
			[]string{`{"p":["a",true,false]}`}, []string{`{"p":["a","b"]}`}},
		// With one schema as items, additionalItems has no effect in 2019-09.
		{`{` + d19 + `"properties":{"p":{"items":{"type":"string"},"additionalItems":false}}}`,
			[]string{`{"p":["a","b"]}`}, []string{`{"p":["a",1]}`}},
		{`{` + none + `"properties":{"p":{"prefixItems":[{"type":"string"}],"items":false}}}`,
			[]string{`{"p":["a"]}`}, []string{`{"p":["a","b"]}`}},
	} {
		s, err := compileSchema(json.RawMessage(tc.schema))
		if err != nil {
			t.Errorf("%s: %v", tc.schema, err)
			continue
		}
		for _, a := range tc.valid {
			if err := validateArgs(s, json.RawMessage(a)); err != nil {
				t.Errorf("%s\n  %s refused: %v", tc.schema, a, err)
			}
		}
		for _, a := range tc.wrong {
			if err := validateArgs(s, json.RawMessage(a)); err == nil {
				t.Errorf("%s\n  %s accepted", tc.schema, a)
			}
		}
	}
}

// The model reads these messages to correct its call: each says where in
// the arguments the problem is and writes numbers as JSON does.
func TestViolationMessages(t *testing.T) {
	s, err := compileSchema(json.RawMessage(`{"type":"object","additionalProperties":false,"required":["query"],
		"properties":{"query":{"type":"string","maxLength":5},"limit":{"type":"integer","maximum":10},"price":{"multipleOf":0.5},
		"tags":{"type":"array","items":{"type":"string"}},"pair":{"prefixItems":[{"type":"string"},{"type":"integer"}]},
		"o":{"$ref":"#/$defs/o"},"a~/b":{"type":"boolean"},"big":{"type":"integer","maximum":9007199254740992},
		"either":{"anyOf":[{"type":"string"},{"type":"integer"}]}},
		"$defs":{"o":{"type":"object","properties":{"b":{"enum":["x","y"]}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	for args, want := range map[string]string{
		`{"query":7}`:                          `at '/query': type: 7 has type "integer", want "string"`,
		`{"query":"abcdefg"}`:                  `at '/query': maxLength: "abcdefg" contains 7 Unicode code points, more than 5`,
		`{}`:                                   `at '': required: missing properties: ["query"]`,
		`{"query":"x","limit":11}`:             `at '/limit': maximum: 11 is greater than 10`,
		`{"query":"x","price":1.25}`:           `at '/price': multipleOf: 1.25 is not a multiple of 0.5`,
		`{"query":"x","extra":true}`:           `at '': unexpected additional properties ["extra"]`,
		`{"query":"x","tags":["a",3]}`:         `at '/tags/*': type: 3 has type "integer", want "string"`,
		`{"query":"x","pair":["a","b"]}`:       `at '/pair/1': type: b has type "string", want "integer"`,
		`{"query":"x","o":{"b":"z"}}`:          `at '/o/b': enum: z does not equal any of: [x y]`,
		`{"query":"x","a~/b":1}`:               `at '/a~0~1b': type: 1 has type "integer", want "boolean"`,
		`{"query":"x","big":9007199254740993}`: `at '/big': maximum: 9007199254740993 is greater than 9007199254740992`,
		`{"query":"x","either":true}`:          `at '/either': anyOf: did not validate against any of`,
	} {
		err := validateArgs(s, json.RawMessage(args))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v\n  want %s", args, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "validating ") {
			t.Errorf("%s: the library's chain was left in: %v", args, err)
		}
	}
	for args, want := range map[string]string{
		`{"query":"x","limit":1e400}`: "the number 1e400, which is out of range",
		`{"query":"x"} {}`:            "after top-level value, at offset 15",
	} {
		if err := validateArgs(s, json.RawMessage(args)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", args, err, want)
		}
	}
}

func TestTidyNumbers(t *testing.T) {
	for in, want := range map[string]string{
		"maximum: 11/1 is greater than 10.000000":            "maximum: 11 is greater than 10",
		"minimum: -3/2 is less than -1.250000":               "minimum: -1.5 is less than -1.25",
		"multipleOf: 1999/100 is not a multiple of 0.010000": "multipleOf: 19.99 is not a multiple of 0.01",
		`pattern: "a1/2b 3.1415926" x2/3`:                    `pattern: "a1/2b 3.1415926" x2/3`,
		"at '/tags/1': 2024-01-02":                           "at '/tags/1': 2024-01-02",
	} {
		if got := tidyNumbers(in); got != want {
			t.Errorf("tidyNumbers(%q) = %q, want %q", in, got, want)
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
		`{"query":7}`:                {"invalid_arguments", "'/query'", `want "string"`},
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

// A schema that refers to itself for a member is checked as deep as the
// value goes, and the message names the place.
func TestRecursiveSchema(t *testing.T) {
	s, err := compileSchema(json.RawMessage(`{"$defs":{"n":{"type":"object","properties":{"c":{"$ref":"#/$defs/n"}}}},"$ref":"#/$defs/n"}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := validateArgs(s, json.RawMessage(`{"c":{"c":{"c":{}}}}`)); err != nil {
		t.Error(err)
	}
	err = validateArgs(s, json.RawMessage(`{"c":{"c":{"c":1}}}`))
	if err == nil || !strings.Contains(err.Error(), `at '/c/c/c': type: 1 has type "integer", want "object"`) {
		t.Errorf("got %v", err)
	}
}
