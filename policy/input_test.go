package policy

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

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

// FuzzParseAction: any bytes give an action or an error, and an accepted
// action always has a Cedar subject (policy/opa checks that it builds an
// OPA input document).
func FuzzParseAction(f *testing.F) {
	f.Add([]byte(`{"type":"tool_call","tool":"tool.shell","arguments":{"cmd":"ls"}}`))
	f.Add([]byte(`{"type":"delegate","target":"agent.critic"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := ParseAction(data)
		if err != nil {
			return
		}
		if _, _, err := a.subject(); err != nil {
			t.Fatalf("accepted action %+v has no subject: %v", a, err)
		}
	})
}
