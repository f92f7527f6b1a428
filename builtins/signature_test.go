package builtins

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestSignature(t *testing.T) {
	for _, tc := range []struct{ schema, want string }{
		{``, `{}`},
		{`{"type":"object"}`, `object`},
		{`{"type":"object","properties":{}}`, `{}`},
		{`{"type":"object","properties":{"path":{"type":"string"},"offset":{"type":"integer","minimum":0}},"required":["path"]}`, `{path: string, offset?: integer}`},
		{`{"type":"object","properties":{"scope":{"enum":["facts","conventions"]},"n":{"type":["integer","null"]}}}`, `{scope?: "facts" | "conventions", n?: integer | null}`},
		{`{"type":"object","properties":{"tags":{"type":"array","items":{"type":"string"}},"m":{"type":"object","properties":{"k":{"const":1}},"required":["k"]}}}`, `{tags?: [string], m?: {k: 1}}`},
		{`{"properties":{"weird name":{}}}`, `{"weird name"?: any}`},
		{`{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":"object","properties":{"c":{"type":"object","properties":{"d":{"type":"string"}}}}}}}}}`, `{a?: {b?: {c?: {…}}}}`},
		{`[1]`, `(schema not shown)`},
		{`{"type":"x\ny","properties":{"\u001b":{}}}`, `"x\ny"`},
	} {
		if got := Signature(json.RawMessage(tc.schema)); got != tc.want {
			t.Errorf("Signature(%s) = %s, want %s", tc.schema, got, tc.want)
		}
	}
	// Every builtin's schema reads as docs/tools.md's table writes it,
	// less its notes.
	info, _ := BuiltinInfo("read_file")
	if got := Signature(info.Parameters); !strings.HasPrefix(got, "{path: string, offset?: integer") {
		t.Errorf("read_file: %s", got)
	}
}

// FuzzSignature: a hostile server's schema never panics Signature, and
// its answer holds no control character: every name and value from the
// schema is an identifier or JSON-quoted, so it cannot break a line or
// drive a terminal.
func FuzzSignature(f *testing.F) {
	f.Add([]byte(`{"type":"object","properties":{"a":{"anyOf":[{"type":"string"},{"items":{"enum":[1,2]},"type":"array"}]}},"required":["a"]}`))
	f.Add([]byte(`{"properties":{"a":{"properties":{"a":{"properties":{}}}}}}`))
	f.Add([]byte(`{"type":"x\ny","properties":{"\u001b[2J":{"const":"\u0007"}}}`))
	f.Fuzz(func(t *testing.T, schema []byte) {
		got := Signature(schema)
		for _, r := range got {
			if r < 0x20 || r == 0x7f {
				t.Fatalf("Signature(%q) = %q holds a control character", schema, got)
			}
		}
	})
}
