package builtins

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// docArg is one argument as docs/tools.md's builtin table writes it:
// "name"?: TYPE, where TYPE is string, integer, number or boolean, maybe
// "non-empty " before and " ≥ MIN" or " MIN..MAX" after, or an enum
// "a" | "b".
type docArg struct {
	optional bool
	typ      string
	nonEmpty bool
	min, max *float64
	enum     []string
}

var (
	docArgRE   = regexp.MustCompile(`^"([a-z_]+)"(\?)?(?:: (.+))?$`)
	docTypeRE  = regexp.MustCompile(`^(non-empty )?(string|integer|number|boolean)(?: ≥ ([0-9.]+)| ([0-9.]+)\.\.([0-9.]+))?$`)
	docEnumRE  = regexp.MustCompile(`^"[^"]*"(?: \| "[^"]*")*$`)
	docQuoteRE = regexp.MustCompile(`"([^"]*)"`)
)

// parseDocArgs reads `{"a": string, "b"?: integer 1..50}`. Names listed
// before a type share it: `"s", "p": string`.
func parseDocArgs(s string) (map[string]docArg, error) {
	if !strings.HasPrefix(s, "{") || !strings.HasSuffix(s, "}") {
		return nil, fmt.Errorf("%q is not {...}", s)
	}
	args := map[string]docArg{}
	inner := strings.TrimSuffix(strings.TrimPrefix(s, "{"), "}")
	if inner == "" {
		return args, nil
	}
	var pending []string
	for _, item := range strings.Split(inner, ", ") {
		m := docArgRE.FindStringSubmatch(item)
		if m == nil {
			return nil, fmt.Errorf("%q is not \"name\"?: TYPE", item)
		}
		args[m[1]] = docArg{optional: m[2] == "?"}
		pending = append(pending, m[1])
		if m[3] == "" {
			continue // the type comes with a later name
		}
		var typ docArg
		switch t := docTypeRE.FindStringSubmatch(m[3]); {
		case docEnumRE.MatchString(m[3]):
			for _, q := range docQuoteRE.FindAllStringSubmatch(m[3], -1) {
				typ.enum = append(typ.enum, q[1])
			}
		case t != nil:
			typ.typ, typ.nonEmpty = t[2], t[1] != ""
			typ.min, typ.max = number(t[3]), number(t[5])
			if t[4] != "" {
				typ.min = number(t[4])
			}
		default:
			return nil, fmt.Errorf("%q is not a type", m[3])
		}
		for _, name := range pending {
			typ.optional = args[name].optional
			args[name] = typ
		}
		pending = nil
	}
	if len(pending) > 0 {
		return nil, fmt.Errorf("%q have no type", pending)
	}
	return args, nil
}

func number(s string) *float64 {
	if s == "" {
		return nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		panic(err) // docTypeRE admits digits and dots only
	}
	return &f
}

// TestBuiltinsDocTable holds docs/tools.md's table of builtins to
// BuiltinInfo: one row for each builtin and no other, and each row's
// effect, idempotence and arguments (names, which are optional, types,
// bounds and enums) as the builtin's schema has them.
func TestBuiltinsDocTable(t *testing.T) {
	doc, err := os.ReadFile("../docs/tools.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(doc), "\n")
	start := slices.Index(lines, "| builtin | effect | idempotent | arguments | result |")
	if start < 0 {
		t.Fatal("docs/tools.md has no table | builtin | effect | idempotent | arguments | result |")
	}
	var documented []string
	for i := start + 2; i < len(lines) && strings.HasPrefix(lines[i], "|"); i++ {
		at := fmt.Sprintf("docs/tools.md:%d", i+1)
		c := strings.Split(strings.ReplaceAll(strings.Trim(lines[i], "|"), `\|`, "\x00"), "|")
		if len(c) != 5 {
			t.Errorf("%s: want 5 cells, got %d", at, len(c))
			continue
		}
		for j := range c {
			c[j] = strings.TrimSpace(strings.ReplaceAll(c[j], "\x00", "|"))
		}
		name := strings.Trim(c[0], "`")
		documented = append(documented, name)
		info, ok := BuiltinInfo(name)
		if !ok {
			t.Errorf("%s: %s is not a builtin", at, name)
			continue
		}
		if c[1] != info.Effect {
			t.Errorf("%s: %s's effect is %s, not %s", at, name, info.Effect, c[1])
		}
		if want := map[bool]string{true: "yes", false: "no"}[info.Idempotent]; c[2] != want {
			t.Errorf("%s: %s's idempotent is %s, not %s", at, name, want, c[2])
		}
		span := regexp.MustCompile("`([^`]*)`").FindStringSubmatch(c[3])
		if span == nil {
			t.Errorf("%s: no `{...}` of arguments in %q", at, c[3])
			continue
		}
		args, err := parseDocArgs(span[1])
		if err != nil {
			t.Errorf("%s: %v", at, err)
			continue
		}
		checkDocArgs(t, at, name, args, info.Parameters)
	}
	want := BuiltinNames()
	slices.Sort(documented)
	if !slices.Equal(documented, want) {
		t.Errorf("docs/tools.md's builtins are %q; BuiltinNames() is %q", documented, want)
	}
}

// checkDocArgs compares the documented arguments with a builtin's schema.
func checkDocArgs(t *testing.T, at, name string, args map[string]docArg, raw json.RawMessage) {
	t.Helper()
	var schema struct {
		Type                 string                    `json:"type"`
		Properties           map[string]map[string]any `json:"properties"`
		Required             []string                  `json:"required"`
		AdditionalProperties *bool                     `json:"additionalProperties"`
	}
	if err := json.Unmarshal(raw, &schema); err != nil {
		t.Fatal(err)
	}
	if schema.Type != "object" || schema.AdditionalProperties == nil || *schema.AdditionalProperties {
		t.Errorf("%s: %s's schema is not a closed object, as {...} says", at, name)
	}
	for prop, p := range schema.Properties {
		a, ok := args[prop]
		if !ok {
			t.Errorf("%s: %s takes %q, which the table does not list", at, name, prop)
			continue
		}
		if required := slices.Contains(schema.Required, prop); a.optional == required {
			word := map[bool]string{true: "required", false: "optional"}
			t.Errorf("%s: %s's %q is %s in its schema, %s in the table", at, name, prop, word[required], word[!a.optional])
		}
		got := docArg{optional: a.optional}
		for k, v := range p {
			switch k {
			case "description":
			case "type":
				got.typ, _ = v.(string)
			case "minLength":
				got.nonEmpty = v == 1.0
			case "minimum":
				f := v.(float64)
				got.min = &f
			case "maximum":
				f := v.(float64)
				got.max = &f
			case "enum":
				for _, e := range v.([]any) {
					got.enum = append(got.enum, fmt.Sprint(e))
				}
			default:
				t.Errorf("%s: %s's %q has %s, which the table cannot say", at, name, prop, k)
			}
		}
		if !reflect.DeepEqual(got, a) {
			t.Errorf("%s: %s's %q is %s in its schema, %s in the table", at, name, prop, describe(got), describe(a))
		}
	}
	for arg := range args {
		if _, ok := schema.Properties[arg]; !ok {
			t.Errorf("%s: the table lists %q, which %s does not take", at, arg, name)
		}
	}
}

func describe(a docArg) string {
	s := a.typ
	if a.nonEmpty {
		s = "non-empty " + s
	}
	if a.min != nil {
		s += fmt.Sprintf(" min %g", *a.min)
	}
	if a.max != nil {
		s += fmt.Sprintf(" max %g", *a.max)
	}
	if a.enum != nil {
		s += fmt.Sprintf(" enum %q", a.enum)
	}
	return s
}
