package policy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/symbi-dev/symbi/plan"
)

// Rules is the built-in engine: glob patterns over tool names, with an
// optional argument glob. Deny wins, then ask, then allow; an action no
// pattern matches is not applicable.
//
// A pattern is "name" or "name:arg=glob". For a tool call the name is the
// tool's; delegate, respond and terminate actions are named by their type and
// match only patterns that spell the type out ("delegate:target=critic",
// "respond:content=*password*"), so `deny = ["*"]` stops every tool without
// stopping the final answer. Their arguments are target and task, content,
// and reason.
//
// A pattern whose name is an action type ("delegate", "respond",
// "terminate") allows or asks for that action only, never for a tool call
// of the same name: "delegate:target=critic" must not let through a tool
// that merely calls itself delegate. As a deny it stops both, so a deny
// written for the action never lets such a tool slip past.
//
// In a glob, * matches any run of characters (including "/") and ? any one
// character; everything else matches itself. * crosses "/" (unlike
// path.Match) because arguments are commands and paths: "shell:cmd=sudo*"
// must catch "sudo rm -rf /", and "write_file:path=/etc/*" everything under
// /etc.
type Rules struct {
	deny, ask, allow []rulePattern
}

type rulePattern struct {
	text     string // as written, for reasons
	name     string
	arg      string // empty: the name alone decides
	value    string
	wildName bool // the name has a wildcard: it matches tool calls only
	// typeName: the name is an action type; as an allow or ask the pattern
	// matches that action only.
	typeName bool
}

// NewRules prepares the patterns, reporting every malformed one.
func NewRules(r plan.RulesPolicy) (*Rules, error) {
	var errs []error
	parse := func(list []string) []rulePattern {
		out := make([]rulePattern, 0, len(list))
		for _, s := range list {
			p, err := parseRulePattern(s)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			out = append(out, p)
		}
		return out
	}
	rules := &Rules{deny: parse(r.Deny), ask: parse(r.Ask), allow: parse(r.Allow)}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return rules, nil
}

func parseRulePattern(s string) (rulePattern, error) {
	p := rulePattern{text: s, name: s}
	if i := strings.IndexByte(s, ':'); i >= 0 {
		p.name = s[:i]
		arg, value, ok := strings.Cut(s[i+1:], "=")
		if !ok || arg == "" {
			return rulePattern{}, fmt.Errorf("rule %q: want \"tool\" or \"tool:argument=glob\"", s)
		}
		p.arg, p.value = arg, value
	}
	// An address where a name belongs ("tool.shell") means the tool.
	p.name = strings.TrimPrefix(p.name, "tool.")
	if p.name == "" {
		return rulePattern{}, fmt.Errorf("rule %q: the tool name is empty", s)
	}
	if !utf8.ValidString(s) {
		return rulePattern{}, fmt.Errorf("rule %q: not valid UTF-8", s)
	}
	p.wildName = strings.ContainsAny(p.name, "*?")
	switch ActionType(p.name) {
	case Delegate, Respond, Terminate:
		p.typeName = true
	}
	return p, nil
}

// Decide never fails on its own account; an action whose arguments are not an
// object is denied.
//
// A tool call's arguments are decoded only when some argument pattern names
// the tool: most rules are names alone, and decoding every call's arguments
// into a map was most of a decision's cost. The others are still checked to
// be one JSON object (json.Valid, which allocates nothing), so the deny for
// arguments that are not an object stands whatever the rules say.
func (r *Rules) Decide(_ context.Context, in Input) Decision {
	name, args, err := r.subject(in.Action)
	if err != nil {
		return Decision{Outcome: Deny, Reason: err.Error(), Engine: "rules", EngineError: true}
	}
	if p, ok := r.first(r.deny, false, in.Action.Type, name, args); ok {
		return Decision{Outcome: Deny, Reason: fmt.Sprintf("%s matches deny rule %q", in.Action, p), Engine: "rules"}
	}
	if p, ok := r.first(r.ask, true, in.Action.Type, name, args); ok {
		return Decision{Outcome: Ask, Reason: fmt.Sprintf("%s matches ask rule %q", in.Action, p), Engine: "rules"}
	}
	if p, ok := r.first(r.allow, true, in.Action.Type, name, args); ok {
		return Decision{Outcome: Allow, Reason: fmt.Sprintf("%s matches allow rule %q", in.Action, p), Engine: "rules"}
	}
	return Decision{Outcome: NotApplicable, Reason: fmt.Sprintf("no rule matches %s", in.Action), Engine: "rules"}
}

// subject is Action.subject, except that a tool call's arguments are only
// checked, not decoded, when no argument pattern could look at them; args is
// then nil, which no pattern without an argument reads.
func (r *Rules) subject(a Action) (string, map[string]any, error) {
	if a.Type != ToolCall || r.readsArguments(a.Tool) {
		return a.subject()
	}
	if isJSONObject(a.Arguments) {
		return a.Tool, nil, nil
	}
	// Not an object: decoding says exactly why, in the usual words.
	return a.subject()
}

// readsArguments reports whether an argument pattern could match a call of
// tool, so its arguments must be decoded.
func (r *Rules) readsArguments(tool string) bool {
	for _, list := range [][]rulePattern{r.deny, r.ask, r.allow} {
		for _, p := range list {
			if p.arg != "" && glob(p.name, tool) {
				return true
			}
		}
	}
	return false
}

// isJSONObject reports whether raw is empty (the empty object) or one JSON
// object, as argumentsObject would accept it.
func isJSONObject(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || t[0] == '{' && json.Valid(t)
}

// first returns the first pattern of list that matches; with lets, a
// pattern named after an action type matches only that action.
func (r *Rules) first(list []rulePattern, lets bool, typ ActionType, name string, args map[string]any) (string, bool) {
	for _, p := range list {
		if lets && p.typeName && typ == ToolCall {
			continue
		}
		if p.matches(typ, name, args) {
			return p.text, true
		}
	}
	return "", false
}

func (p rulePattern) matches(typ ActionType, name string, args map[string]any) bool {
	if p.wildName && typ != ToolCall {
		return false
	}
	if !glob(p.name, name) {
		return false
	}
	if p.arg == "" {
		return true
	}
	v, ok := args[p.arg]
	if !ok {
		return false
	}
	return glob(p.value, argumentText(v))
}

// argumentText is what an argument glob sees: a string as it is, anything
// else as its JSON text (42, true, ["a","b"]).
func argumentText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}

// glob matches s against a pattern of * (any run) and ? (any one rune). It
// backtracks only to the last star, so it is linear in practice and never
// exponential.
func glob(pattern, s string) bool {
	px, sx := 0, 0
	starP, starS := -1, 0
	for sx < len(s) {
		if px < len(pattern) {
			switch c := pattern[px]; c {
			case '*':
				starP, starS = px, sx
				px++
				continue
			case '?':
				_, n := utf8.DecodeRuneInString(s[sx:])
				px++
				sx += n
				continue
			default:
				if c == s[sx] {
					px++
					sx++
					continue
				}
			}
		}
		if starP < 0 {
			return false
		}
		// Let the last star swallow one more rune and try again.
		_, n := utf8.DecodeRuneInString(s[starS:])
		starS += n
		px, sx = starP+1, starS
	}
	for px < len(pattern) && pattern[px] == '*' {
		px++
	}
	return px == len(pattern)
}

// DeniesTool reports whether g is built-in rules with a bare deny pattern
// that names tool: every call of it is denied, whatever any policy allows
// (a deny wins in a chain).
func DeniesTool(g Gate, tool string) bool {
	r, ok := g.(*Rules)
	if !ok {
		return false
	}
	for _, p := range r.deny {
		if p.arg == "" && glob(p.name, tool) {
			return true
		}
	}
	return false
}

// MayAllowTool reports whether g could ever let a call of tool through, for
// `symbi validate`'s warning about an agent whose tools no policy allows.
// Only built-in rules can be answered statically: a bare deny pattern that
// names the tool means never, an allow or ask pattern that names it means
// maybe, and otherwise the rules are not applicable to it. OPA and Cedar
// policies might allow anything, so they answer true.
func MayAllowTool(g Gate, tool string) bool {
	r, ok := g.(*Rules)
	if !ok {
		return true
	}
	if DeniesTool(g, tool) {
		return false
	}
	for _, list := range [][]rulePattern{r.ask, r.allow} {
		for _, p := range list {
			if !p.typeName && glob(p.name, tool) {
				return true
			}
		}
	}
	return false
}
