package policy

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// lines answers Converse's prompts with the given lines, in order, and
// records the prompts.
func lines(answers ...string) (func(string) (string, error), *[]string) {
	var prompts []string
	return func(p string) (string, error) {
		prompts = append(prompts, p)
		if len(answers) == 0 {
			return "", ErrAnswer
		}
		a := answers[0]
		answers = answers[1:]
		return a, nil
	}, &prompts
}

func TestConverse(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	req := Request{Action: Action{Type: ToolCall, Tool: "note", Arguments: json.RawMessage(`{"path":"notes/a.txt","content":"a"}`)}}
	base := ApprovalRecord{ID: "t1", By: "alice", Via: "terminal"}

	for _, tc := range []struct {
		name    string
		answers []string
		check   func(t *testing.T, rec ApprovalRecord, out string)
	}{
		{"edit", []string{"e", `{"path": "notes/b.txt", "content": "b"}`, "y"}, func(t *testing.T, rec ApprovalRecord, out string) {
			if !rec.Approved || string(rec.Arguments) != `{"content":"b","path":"notes/b.txt"}` || rec.Remember != nil {
				t.Errorf("record %+v", rec)
			}
			if !strings.Contains(out, `path: "notes/b.txt"`) || !strings.Contains(out, "digest sha256:") {
				t.Errorf("the edited arguments are not shown with their digest:\n%s", out)
			}
		}},
		{"edit_retried", []string{"edit", "{not json", `["an array"]`, `{"path":"x"}`, "yes"}, func(t *testing.T, rec ApprovalRecord, out string) {
			if !rec.Approved || string(rec.Arguments) != `{"path":"x"}` || strings.Count(out, "not a JSON object") != 2 {
				t.Errorf("record %+v\n%s", rec, out)
			}
		}},
		{"edit_not_confirmed", []string{"e", `{"path":"x"}`, "n"}, func(t *testing.T, rec ApprovalRecord, out string) {
			if rec.Approved || rec.Arguments != nil || !strings.Contains(rec.Reason, "not confirmed") {
				t.Errorf("record %+v", rec)
			}
		}},
		{"remember", []string{"r", "path=notes/* for 1h", "y"}, func(t *testing.T, rec ApprovalRecord, out string) {
			if !rec.Approved || rec.Remember == nil || len(rec.Remember.Widen) != 1 || !rec.Remember.Until.Equal(now.Add(time.Hour)) {
				t.Fatalf("record %+v", rec)
			}
			if !strings.Contains(out, `remember: note with content = "a", path = "notes/a.txt", for the rest of the run`) ||
				!strings.Contains(out, `the rule: note with content = "a", path ~ "notes/*" until 2026-12-01T13:00:00Z`) {
				t.Errorf("the rule is not shown before and after widening:\n%s", out)
			}
		}},
		{"remember_bad_then_exact", []string{"r", "mode=*", "", "y"}, func(t *testing.T, rec ApprovalRecord, out string) {
			if !rec.Approved || rec.Remember == nil || len(rec.Remember.Widen) != 0 || !strings.Contains(out, `no argument "mode" to widen`) {
				t.Errorf("record %+v\n%s", rec, out)
			}
		}},
		{"deny", []string{"n not now"}, func(t *testing.T, rec ApprovalRecord, out string) {
			if rec.Approved || rec.Reason != "not now" {
				t.Errorf("record %+v", rec)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next, _ := lines(tc.answers...)
			var out strings.Builder
			rec, err := Converse(&out, req, next, base, clock)
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, rec, out.String())
		})
	}

	// The rule is shown with the run's secrets redacted, as the arguments
	// are; the record keeps what the run needs to rebuild it.
	secret := req
	secret.Action.Arguments = json.RawMessage(`{"path":"notes/a.txt","content":"token hunter2","n":7}`)
	secret.Redact = func(b json.RawMessage) json.RawMessage {
		return json.RawMessage(strings.ReplaceAll(string(b), "hunter2", "[redacted]"))
	}
	next, _ := lines("r", "path=notes/*", "y")
	var shown strings.Builder
	rec, err := Converse(&shown, secret, next, base, clock)
	if err != nil || !rec.Approved || rec.Remember == nil {
		t.Fatalf("remember with a secret: %+v %v", rec, err)
	}
	if strings.Contains(shown.String(), "hunter2") || strings.Contains(rec.Reason, "hunter2") || !strings.Contains(shown.String(), `content = "token [redacted]"`) {
		t.Errorf("the rule shows a secret:\n%s\n%s", shown.String(), rec.Reason)
	}

	// A delegation offers neither an edit nor a rule.
	next, _ = lines("e")
	var out strings.Builder
	rec, _ = Converse(&out, Request{Action: Action{Type: Delegate, Target: "critic", Task: "x"}}, next, base, clock)
	if rec.Approved || strings.Contains(out.String(), "edit the arguments") {
		t.Errorf("a delegation: %+v\n%s", rec, out.String())
	}
}

// TestStandingNeverWider: a rule covers its tool with exactly its
// arguments, each exact or by its glob; nothing else.
func TestStandingNeverWider(t *testing.T) {
	call := func(tool, args string) Action {
		return Action{Type: ToolCall, Tool: tool, Arguments: json.RawMessage(args)}
	}
	s, err := NewStanding(call("note", `{"path":"notes/a.txt","content":"a*?","n":1}`), []string{"path=notes/*"}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		a    Action
		want bool
	}{
		{call("note", `{"path":"notes/b.txt","content":"a*?","n":1}`), true},
		{call("note", `{"path":"notes/deep/c.txt","n":1,"content":"a*?"}`), true},
		{call("note", `{"path":"notes/b.txt","content":"aXY","n":1}`), false}, // an exact value's * and ? are themselves
		{call("note", `{"path":"other/b.txt","content":"a*?","n":1}`), false},
		{call("note", `{"path":"notes/b.txt","content":"a*?","n":1.0}`), false},
		{call("note", `{"path":"notes/b.txt","content":"a*?"}`), false},                  // an argument fewer
		{call("note", `{"path":"notes/b.txt","content":"a*?","n":1,"mode":"x"}`), false}, // one more
		{call("notes", `{"path":"notes/b.txt","content":"a*?","n":1}`), false},           // another tool
		{Action{Type: Delegate, Target: "note"}, false},
	} {
		if got := s.Matches(c.a, time.Time{}); got != c.want {
			t.Errorf("%s %s: %v, want %v", c.a.Tool, c.a.Arguments, got, c.want)
		}
	}
	// An exact value that is not a string matches only itself: the
	// number 1, never the string "1", and it is shown as a number.
	n, err := NewStanding(call("note", `{"n":1,"on":true}`), nil, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if n.Matches(call("note", `{"n":"1","on":true}`), time.Time{}) || n.Matches(call("note", `{"n":1,"on":"true"}`), time.Time{}) {
		t.Errorf("the rule %s matched a string for a number or a bool", n)
	}
	if got := n.String(); got != `note with n = 1, on = true, for the rest of the run` {
		t.Errorf("shown as %s", got)
	}
	until := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s.Until = until
	if s.Matches(call("note", `{"path":"notes/a.txt","content":"a*?","n":1}`), until) {
		t.Errorf("a rule matched at its end")
	}
}

// FuzzStanding holds a remembered rule to "never wider than shown": made
// from a call, it covers that call; without globs it covers exactly the
// calls whose arguments have the same canonical JSON; with one argument
// widened, only calls with the same argument names whose other arguments
// are the same; and it is shown on one line.
func FuzzStanding(f *testing.F) {
	f.Add(`{"path":"notes/a.txt","content":"a"}`, `{"path":"notes/b.txt","content":"a"}`, "path=notes/*")
	f.Add(`{"n":1}`, `{"n":"1"}`, "")
	f.Add(`{"n":1.0}`, `{"n":1}`, "n=1*")
	f.Add(`{"o":{"b":1,"a":[true,null]}}`, `{"o":{"a":[true,null],"b":1}}`, "")
	f.Add(`{}`, `{"x":"y"}`, "")
	f.Add(`{"a":"x\u202ey"}`, `{"a":"x\u202ey"}`, "a=*")
	f.Fuzz(func(t *testing.T, first, second, widen string) {
		a := Action{Type: ToolCall, Tool: "t", Arguments: json.RawMessage(first)}
		b := Action{Type: ToolCall, Tool: "t", Arguments: json.RawMessage(second)}
		var ws []string
		if widen != "" {
			ws = []string{widen}
		}
		s, err := NewStanding(a, ws, time.Time{})
		if err != nil {
			return
		}
		if !s.Matches(a, time.Time{}) {
			t.Fatalf("the rule %s does not cover the call it was made from", s)
		}
		if shown := s.String(); strings.ContainsAny(shown, "\n\r") {
			t.Fatalf("the rule is shown on more than one line: %q", shown)
		}
		objA, errA := argumentsObject(a.Arguments)
		objB, errB := argumentsObject(b.Arguments)
		if errA != nil || errB != nil {
			if errB != nil && s.Matches(b, time.Time{}) {
				t.Fatalf("the rule %s covers arguments that are not an object: %s", s, second)
			}
			return
		}
		matched := s.Matches(b, time.Time{})
		if other := (Action{Type: ToolCall, Tool: "u", Arguments: b.Arguments}); s.Matches(other, time.Time{}) {
			t.Fatalf("the rule %s covers another tool", s)
		}
		widened := map[string]bool{}
		for _, p := range s.Arguments {
			if p.Glob {
				widened[p.Name] = true
			}
		}
		if len(widened) == 0 {
			ca, _ := marshalCanonical(objA)
			cb, _ := marshalCanonical(objB)
			if matched != (string(ca) == string(cb)) {
				t.Fatalf("exact rule %s: covers %s is %v, but the canonical arguments are %s and %s", s, second, matched, ca, cb)
			}
			return
		}
		if !matched {
			return
		}
		if len(objA) != len(objB) {
			t.Fatalf("the rule %s covers %s, which has other arguments than %s", s, second, first)
		}
		for k, va := range objA {
			vb, ok := objB[k]
			if !ok {
				t.Fatalf("the rule %s covers %s, which lacks %q", s, second, k)
			}
			if widened[k] {
				continue
			}
			ca, _ := marshalCanonical(va)
			cb, _ := marshalCanonical(vb)
			if string(ca) != string(cb) {
				t.Fatalf("the rule %s covers %s: %q is %s, not %s as shown", s, second, k, cb, ca)
			}
		}
	})
}
