package policy

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/symbi-dev/symbi/plan"
)

func TestGlob(t *testing.T) {
	for _, tc := range []struct {
		pattern, s string
		want       bool
	}{
		{"*", "", true},
		{"*", "anything/with/slashes", true},
		{"read_*", "read_file", true},
		{"read_*", "write_file", false},
		{"sudo*", "sudo rm -rf /", true},
		{"/etc/*", "/etc/ssh/sshd_config", true},
		{"/etc/*", "/home/etc/x", false},
		{"?at", "cat", true},
		{"?at", "at", false},
		{"?é", "xé", true},
		{"é?", "éx", true},
		{"a*b*c", "aXbYbZc", true},
		{"a*b*c", "aXbYbZ", false},
		{"[a]", "[a]", true}, // brackets are literal: only * and ? are special
		{"", "", true},
		{"", "x", false},
	} {
		if got := glob(tc.pattern, tc.s); got != tc.want {
			t.Errorf("glob(%q, %q) = %v, want %v", tc.pattern, tc.s, got, tc.want)
		}
	}
}

func TestRulesDecisions(t *testing.T) {
	p := testPlan(rulesPolicy("policy.rules", plan.RulesPolicy{
		Deny:  []string{"shell:cmd=sudo*", "write_file:path=/etc/*", "delegate:target=intern", "respond:content=*password*"},
		Ask:   []string{"write_*", "shell:cmd=rm *"},
		Allow: []string{"tool.web_search", "shell:cmd=ls*", "shell:count=3", "delegate:target=critic", "calc?lator"},
	}))
	g := mustGate(t, p, "policy.rules")
	for _, tc := range []struct {
		name   string
		action Action
		want   Outcome
		reason string
	}{
		{"deny by argument", toolCall("shell", `{"cmd":"sudo rm -rf /"}`), Deny, `deny rule "shell:cmd=sudo*"`},
		{"deny wins over ask", toolCall("write_file", `{"path":"/etc/passwd"}`), Deny, "write_file:path=/etc/*"},
		{"ask by name glob", toolCall("write_file", `{"path":"/tmp/x"}`), Ask, `ask rule "write_*"`},
		{"ask by argument", toolCall("shell", `{"cmd":"rm x"}`), Ask, "rm *"},
		{"allow by name, written as an address", toolCall("web_search", `{"query":"x"}`), Allow, `allow rule "tool.web_search"`},
		{"allow by argument", toolCall("shell", `{"cmd":"ls -l"}`), Allow, "ls*"},
		{"non-string argument as JSON text", toolCall("shell", `{"count":3}`), Allow, "count=3"},
		{"question mark", toolCall("calculator", `{}`), Allow, "calc?lator"},
		{"no match", toolCall("shell", `{"cmd":"cat x"}`), NotApplicable, "no rule matches"},
		{"missing argument does not match", toolCall("shell", `{}`), NotApplicable, ""},
		{"delegate allowed", Action{Type: Delegate, Target: "critic", Task: "check"}, Allow, "delegate:target=critic"},
		{"delegate denied", Action{Type: Delegate, Target: "intern"}, Deny, "delegate:target=intern"},
		{"respond denied by content", Action{Type: Respond, Content: "the password is x"}, Deny, "password"},
		{"respond not matched by wildcard names", Action{Type: Respond, Content: "fine"}, NotApplicable, ""},
		{"terminate", Action{Type: Terminate, Reason: "done"}, NotApplicable, ""},
		// A tool that calls itself delegate is not the delegate action: an
		// allow written for the action never lets it through, a deny does
		// stop it.
		{"a tool named delegate is not allowed by a delegate rule", toolCall("delegate", `{"target":"critic","task":"x"}`), NotApplicable, "no rule matches"},
		{"a tool named delegate is denied by a delegate rule", toolCall("delegate", `{"target":"intern"}`), Deny, "delegate:target=intern"},
		{"a tool named respond is denied by a respond rule", toolCall("respond", `{"content":"password"}`), Deny, "password"},
		{"arguments not an object", toolCall("shell", `[1]`), Deny, "object"},
		// No argument pattern names these tools, so their arguments are
		// checked without being decoded; the verdicts are the same.
		{"arguments not an object, no argument pattern", toolCall("web_search", `[1]`), Deny, "object"},
		{"arguments not JSON, no argument pattern", toolCall("web_search", `{"query":`), Deny, "EOF"},
		{"trailing data, no argument pattern", toolCall("web_search", `{} {}`), Deny, "trailing"},
		{"empty arguments, no argument pattern", toolCall("web_search", ``), Allow, "web_search"},
		{"spaced object, no argument pattern", toolCall("web_search", " {\"query\": 1}\n"), Allow, "web_search"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := g.Decide(context.Background(), input(p, tc.action))
			if d.Outcome != tc.want || !strings.Contains(d.Reason, tc.reason) || d.Engine != "rules" {
				t.Errorf("got %s %q (engine %s), want %s containing %q", d.Outcome, d.Reason, d.Engine, tc.want, tc.reason)
			}
		})
	}
}

func TestRulesWildcardNameSkipsNonToolActions(t *testing.T) {
	p := testPlan(rulesPolicy("policy.rules", plan.RulesPolicy{Deny: []string{"*"}}))
	g := mustGate(t, p, "policy.rules")
	if d := g.Decide(context.Background(), input(p, Action{Type: Respond, Content: "hi"})); d.Outcome != NotApplicable {
		t.Errorf(`deny = ["*"] on a respond: got %s, want not_applicable`, d.Outcome)
	}
	if d := g.Decide(context.Background(), input(p, toolCall("web_search", `{}`))); d.Outcome != Deny {
		t.Errorf(`deny = ["*"] on a tool call: got %s, want deny`, d.Outcome)
	}
}

func TestRulesMalformed(t *testing.T) {
	p := testPlan(rulesPolicy("policy.rules", plan.RulesPolicy{Deny: []string{"shell:cmd", ":x=y"}, Allow: []string{"ok", "shell:=x"}}))
	_, err := FromPlan(context.Background(), p, "policy.rules", t.TempDir())
	if err == nil {
		t.Fatal("want an error for malformed patterns")
	}
	for _, want := range []string{`"shell:cmd"`, `":x=y"`, `"shell:=x"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
}

// FuzzGlob checks the glob matcher against a regular expression built from
// the same pattern, and that no pattern or argument panics.
func FuzzGlob(f *testing.F) {
	for _, s := range [][2]string{{"sudo*", "sudo rm -rf /"}, {"a*b?c", "axxbyc"}, {"*é*", "café"}, {"?", "é"}, {"**", ""}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, s string) {
		if !utf8.ValidString(pattern) || !utf8.ValidString(s) {
			return
		}
		var re strings.Builder
		re.WriteString(`(?s)\A`)
		for _, r := range pattern {
			switch r {
			case '*':
				re.WriteString(`.*`)
			case '?':
				re.WriteString(`.`)
			default:
				re.WriteString(regexp.QuoteMeta(string(r)))
			}
		}
		re.WriteString(`\z`)
		want := regexp.MustCompile(re.String()).MatchString(s)
		if got := glob(pattern, s); got != want {
			t.Fatalf("glob(%q, %q) = %v, want %v", pattern, s, got, want)
		}
	})
}

func TestMayAllowTool(t *testing.T) {
	p := testPlan(rulesPolicy("policy.rules", plan.RulesPolicy{
		Deny:  []string{"shell", "write_file:path=/etc/*"},
		Ask:   []string{"write_*"},
		Allow: []string{"read_*", "shell", "delegate:target=critic"},
	}))
	g := mustGate(t, p, "policy.rules")
	for tool, want := range map[string]bool{"shell": false, "write_file": true, "read_file": true, "web_search": false, "delegate": false} {
		if got := MayAllowTool(g, tool); got != want {
			t.Errorf("MayAllowTool(%s) = %v, want %v", tool, got, want)
		}
	}
	if !MayAllowTool(gateFunc(nil), "anything") {
		t.Error("an engine that cannot be read statically may allow anything")
	}
}
