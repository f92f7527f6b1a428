package policy

import (
	"encoding/json"
	"fmt"
)

// decodeDecision turns the value a Rego query produced into a Decision. A
// boolean is allow or deny; an object names its decision with a reason and,
// for modify, the new arguments. Anything else is an error, which the caller
// turns into a deny: a policy whose author returned the wrong shape must not
// let actions through.
func decodeDecision(v any) (Decision, error) {
	switch v := v.(type) {
	case bool:
		if v {
			return Decision{Outcome: Allow}, nil
		}
		return Decision{Outcome: Deny, Reason: "the query returned false"}, nil
	case map[string]any:
		return decodeDecisionObject(v)
	}
	return Decision{}, fmt.Errorf("the query returned %s; want a boolean or an object {decision, reason, arguments}", jsonKind(v))
}

func decodeDecisionObject(m map[string]any) (Decision, error) {
	var d Decision
	for key := range m {
		switch key {
		case "decision", "reason", "arguments":
		default:
			return Decision{}, fmt.Errorf("the query's object has an unknown member %q (want decision, reason, arguments)", key)
		}
	}
	raw, ok := m["decision"]
	if !ok {
		return Decision{}, fmt.Errorf("the query's object has no decision member (want one of %s)", outcomeList)
	}
	s, ok := raw.(string)
	if !ok {
		return Decision{}, fmt.Errorf("the query's decision is %s, want a string: one of %s", jsonKind(raw), outcomeList)
	}
	d.Outcome = Outcome(s)
	if !d.Outcome.valid() {
		return Decision{}, fmt.Errorf("the query's decision %q is not one of %s", s, outcomeList)
	}
	if r, ok := m["reason"]; ok {
		s, ok := r.(string)
		if !ok {
			return Decision{}, fmt.Errorf("the query's reason is %s, want a string", jsonKind(r))
		}
		d.Reason = s
	}
	args, hasArgs := m["arguments"]
	switch {
	case d.Outcome == Modify && !hasArgs:
		return Decision{}, fmt.Errorf("the query's decision is modify but it gives no arguments")
	case hasArgs && d.Outcome != Modify:
		return Decision{}, fmt.Errorf("the query gives arguments with decision %q; only modify may change them", d.Outcome)
	case hasArgs:
		if _, ok := args.(map[string]any); !ok {
			return Decision{}, fmt.Errorf("the query's arguments are %s, want an object", jsonKind(args))
		}
		b, err := json.Marshal(args)
		if err != nil {
			return Decision{}, fmt.Errorf("the query's arguments: %w", err)
		}
		d.Arguments = b
	}
	return d, nil
}

func (o Outcome) valid() bool {
	switch o {
	case Allow, Deny, Modify, Ask, NotApplicable:
		return true
	}
	return false
}

const outcomeList = "allow, deny, modify, ask, not_applicable"
