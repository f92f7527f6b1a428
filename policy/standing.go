package policy

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"
)

// Standing is a person's "approve and remember": a rule that approves,
// for the rest of the run (or until Until), the calls of one tool whose
// arguments fit it, where a policy asks or the tool needs approval. It is
// never wider than what the person was shown and confirmed: one tool, by
// name; every argument of the call named, each matched exactly or by the
// glob the person wrote for it; a call with an argument more or fewer does
// not fit. It answers an ask, never a deny.
type Standing struct {
	Tool      string            `json:"tool"`
	Arguments []ArgumentPattern `json:"arguments,omitempty"` // by name
	// Until ends it; zero: it lasts as long as the run.
	Until time.Time `json:"until,omitempty"`
}

// ArgumentPattern is one argument of a standing rule: its value exactly
// (Glob false), or a glob over its text ("*" any run, "?" any one
// character; a value that is not a string is matched as its JSON text), as
// the built-in rules match. An exact value that is not a string (a number,
// true, an object) is its canonical JSON, JSON true: it matches only that
// value, never the string of the same text (1 is not "1").
type ArgumentPattern struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	Glob  bool   `json:"glob,omitempty"`
	JSON  bool   `json:"json,omitempty"`
}

// NewStanding is the rule a person is offered for approving a: the tool,
// and every argument exactly as it is; each of widen ("name=glob") makes
// one argument a glob instead. An argument a does not have cannot be
// added: the rule never covers what was not shown. until zero: the run.
func NewStanding(a Action, widen []string, until time.Time) (Standing, error) {
	if a.Type != ToolCall {
		return Standing{}, fmt.Errorf("only a tool call can be remembered, not a %s", a.Type)
	}
	args, err := argumentsObject(DecidedArguments(a))
	if err != nil {
		return Standing{}, err
	}
	s := Standing{Tool: a.Tool, Until: until}
	for name, v := range args {
		text, isJSON, err := exactText(v)
		if err != nil {
			return Standing{}, err
		}
		s.Arguments = append(s.Arguments, ArgumentPattern{Name: name, Value: text, JSON: isJSON})
	}
	sort.Slice(s.Arguments, func(i, j int) bool { return s.Arguments[i].Name < s.Arguments[j].Name })
	for _, w := range widen {
		name, g, ok := strings.Cut(w, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return Standing{}, fmt.Errorf("%q: write name=glob, e.g. path=notes/*", w)
		}
		i := sort.Search(len(s.Arguments), func(i int) bool { return s.Arguments[i].Name >= name })
		if i == len(s.Arguments) || s.Arguments[i].Name != name {
			return Standing{}, fmt.Errorf("%s has no argument %q to widen (it has %s): a remembered rule covers only the arguments shown", a.Tool, name, s.names())
		}
		if len(g) > maxGlob {
			return Standing{}, fmt.Errorf("the glob for %s is %d characters: at most %d, so that it is shown whole", name, len(g), maxGlob)
		}
		s.Arguments[i] = ArgumentPattern{Name: name, Value: g, Glob: true}
	}
	if !s.Matches(a, time.Time{}) {
		return Standing{}, fmt.Errorf("the rule %s does not cover the call it approves", s)
	}
	return s, nil
}

func (s Standing) names() string {
	if len(s.Arguments) == 0 {
		return "none"
	}
	out := make([]string, len(s.Arguments))
	for i, p := range s.Arguments {
		out[i] = p.Name
	}
	return strings.Join(out, ", ")
}

// maxGlob is the longest glob a rule takes: every glob is shown whole.
const maxGlob = 200

// exactText is a string's own text, or (isJSON) the canonical JSON of a
// value that is not a string.
func exactText(v any) (text string, isJSON bool, err error) {
	if s, ok := v.(string); ok {
		return s, false, nil
	}
	b, err := marshalCanonical(v)
	return string(b), true, err
}

// Matches reports whether the rule covers a at now (zero: whenever): a
// call of its tool with exactly its arguments, each fitting its pattern,
// before Until.
func (s Standing) Matches(a Action, now time.Time) bool {
	if a.Type != ToolCall || a.Tool != s.Tool {
		return false
	}
	if !now.IsZero() && !s.Until.IsZero() && !now.Before(s.Until) {
		return false
	}
	args, err := argumentsObject(DecidedArguments(a))
	if err != nil || len(args) != len(s.Arguments) {
		return false
	}
	for _, p := range s.Arguments {
		v, ok := args[p.Name]
		if !ok {
			return false
		}
		if p.Glob {
			if !glob(p.Value, argumentText(v)) {
				return false
			}
			continue
		}
		text, isJSON, err := exactText(v)
		if err != nil || isJSON != p.JSON || text != p.Value {
			return false
		}
	}
	return true
}

// String is the rule as a person is shown it, one line, escaped:
// write_file with path ~ "notes/*", content = "hello" (until 15:04:05).
func (s Standing) String() string {
	var parts []string
	for _, p := range s.Arguments {
		// An exact value is shown as the arguments are (elided in the
		// middle when long: it matches only itself); a glob whole.
		op, room := "=", 60
		if p.Glob {
			op, room = "~", maxGlob+20
		}
		value := quoteFit(p.Value, room)
		if p.JSON && !p.Glob {
			value = fitLine(p.Value, room) // 1, true, {"a":1}: not a string
		}
		parts = append(parts, fmt.Sprintf("%s %s %s", renderKey(p.Name), op, value))
	}
	text := EscapeLine(s.Tool)
	if len(parts) > 0 {
		text += " with " + strings.Join(parts, ", ")
	} else {
		text += " with no arguments"
	}
	if !s.Until.IsZero() {
		text += " until " + s.Until.UTC().Format(time.RFC3339)
	} else {
		text += ", for the rest of the run"
	}
	return text
}

// Redacted is the rule to show a person, with redact (Request.Redact)
// taking the run's secrets out of every value; nil: as it is. It is for
// showing only: the rule kept matches the exact values.
func (s Standing) Redacted(redact func(json.RawMessage) json.RawMessage) Standing {
	if redact == nil {
		return s
	}
	out := s
	out.Arguments = make([]ArgumentPattern, len(s.Arguments))
	for i, p := range s.Arguments {
		if p.JSON && !p.Glob {
			p.Value = string(redact(json.RawMessage(p.Value)))
		} else if b, err := json.Marshal(p.Value); err == nil {
			var v string
			if json.Unmarshal(redact(b), &v) == nil {
				p.Value = v
			}
		}
		out.Arguments[i] = p
	}
	return out
}
