package builtins

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
)

// Signature is a tool's arguments in one line, read from its JSON Schema
// as docs/tools.md writes them: `{path: string, offset?: integer}`. Members
// keep the schema's order; one that is not required has a "?"; an enum is
// its values (`"facts" | "conventions"`), an array `[T]`, a nested object
// its own braces (to three levels, then `{…}`). A schema it cannot read is
// "(schema not shown)"; none at all is "{}" (any object). `symbi tools` and
// the REPL's :tools show it; --json has the schema itself.
func Signature(schema json.RawMessage) string {
	if len(bytes.TrimSpace(schema)) == 0 {
		return "{}"
	}
	var s map[string]json.RawMessage
	if json.Unmarshal(schema, &s) != nil {
		return "(schema not shown)"
	}
	return typeOf(s, 0)
}

func typeOf(s map[string]json.RawMessage, depth int) string {
	if raw, ok := s["enum"]; ok {
		var vals []json.RawMessage
		if json.Unmarshal(raw, &vals) == nil && len(vals) > 0 {
			parts := make([]string, len(vals))
			for i, v := range vals {
				parts[i] = compact(v)
			}
			return strings.Join(parts, " | ")
		}
	}
	if raw, ok := s["const"]; ok {
		return compact(raw)
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		var alts []map[string]json.RawMessage
		if json.Unmarshal(s[k], &alts) == nil && len(alts) > 0 {
			parts := make([]string, len(alts))
			for i, a := range alts {
				parts[i] = typeOf(a, depth)
			}
			return strings.Join(parts, " | ")
		}
	}
	var types []string
	var one string
	if json.Unmarshal(s["type"], &one) == nil && one != "" {
		types = []string{one}
	} else {
		_ = json.Unmarshal(s["type"], &types)
	}
	if len(types) == 0 {
		if _, ok := s["properties"]; ok {
			types = []string{"object"}
		} else {
			return "any"
		}
	}
	parts := make([]string, 0, len(types))
	for _, t := range types {
		switch t {
		case "object":
			parts = append(parts, objectOf(s, depth))
		case "array":
			var items map[string]json.RawMessage
			if json.Unmarshal(s["items"], &items) == nil && items != nil {
				parts = append(parts, "["+typeOf(items, depth+1)+"]")
			} else {
				parts = append(parts, "[any]")
			}
		default:
			parts = append(parts, memberName(t)) // a hostile schema's "type" may be any text
		}
	}
	return strings.Join(parts, " | ")
}

// objectOf writes an object schema's members in the order the schema
// lists them.
func objectOf(s map[string]json.RawMessage, depth int) string {
	props, order := orderedMembers(s["properties"])
	if len(order) == 0 {
		if props != nil {
			return "{}" // no members: the tool takes no arguments
		}
		return "object"
	}
	if depth >= 3 {
		return "{…}"
	}
	var required []string
	_ = json.Unmarshal(s["required"], &required)
	parts := make([]string, 0, len(order))
	for _, name := range order {
		var p map[string]json.RawMessage
		t := "any"
		if json.Unmarshal(props[name], &p) == nil && p != nil {
			t = typeOf(p, depth+1)
		}
		opt := "?"
		if slices.Contains(required, name) {
			opt = ""
		}
		parts = append(parts, memberName(name)+opt+": "+t)
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// orderedMembers decodes a JSON object keeping its members' order.
func orderedMembers(raw json.RawMessage) (map[string]json.RawMessage, []string) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, nil
	}
	m := map[string]json.RawMessage{}
	var order []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, nil
		}
		k, _ := t.(string)
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return nil, nil
		}
		if _, dup := m[k]; !dup {
			order = append(order, k)
		}
		m[k] = v
	}
	return m, order
}

// memberName quotes a name that is not a plain identifier.
func memberName(n string) string {
	for i, r := range n {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && (r >= '0' && r <= '9' || r == '-')) {
			b, _ := json.Marshal(n)
			return string(b)
		}
	}
	if n == "" {
		return `""`
	}
	return n
}

func compact(v json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, v) != nil {
		return string(v)
	}
	return b.String()
}
