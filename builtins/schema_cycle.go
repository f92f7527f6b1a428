package builtins

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// refCycle refuses a schema in which following $ref, $dynamicRef and the
// keywords that apply a subschema to the same value (allOf, anyOf, oneOf,
// not, if/then/else, dependentSchemas) leads back to a schema already on the
// way, without descending into a member or an element: validating any value
// that reaches it would recurse forever. The library does not detect this,
// and the stack overflow it ends in kills the process (it cannot be
// recovered), so a server's schema could crash a run. Each reference is
// resolved as the library resolves it (against the base its $id ancestors
// set), and a $dynamicRef may go to any schema with that $dynamicAnchor.
func refCycle(root *jsonschema.Schema, d draft) error {
	ix := schemaIndex{
		byURI:   map[string]*jsonschema.Schema{},
		base:    map[*jsonschema.Schema]*url.URL{},
		baseOf:  map[*jsonschema.Schema]*jsonschema.Schema{},
		anchors: map[*jsonschema.Schema]map[string]*jsonschema.Schema{},
		dynamic: map[string][]*jsonschema.Schema{},
		path:    map[*jsonschema.Schema]string{},
		draft:   d,
	}
	rootURI, _ := url.Parse(schemaURL)
	ix.index(root, root, rootURI, "")
	state := map[*jsonschema.Schema]int{} // 1: on the way, 2: done
	var visit func(s *jsonschema.Schema) error
	visit = func(s *jsonschema.Schema) error {
		switch state[s] {
		case 1:
			return fmt.Errorf("the schema at %s applies itself to the same value through $ref and in-place keywords, which never ends", ix.where(s))
		case 2:
			return nil
		}
		state[s] = 1
		for _, next := range ix.inPlace(s) {
			if err := visit(next); err != nil {
				return err
			}
		}
		state[s] = 2
		return nil
	}
	for _, s := range ix.order {
		if err := visit(s); err != nil {
			return err
		}
	}
	return nil
}

type schemaIndex struct {
	byURI   map[string]*jsonschema.Schema                        // a base URI (no fragment): its schema
	base    map[*jsonschema.Schema]*url.URL                      // each schema's base URI
	baseOf  map[*jsonschema.Schema]*jsonschema.Schema            // each schema's base schema
	anchors map[*jsonschema.Schema]map[string]*jsonschema.Schema // a base schema's anchors
	dynamic map[string][]*jsonschema.Schema                      // every schema with that $dynamicAnchor
	path    map[*jsonschema.Schema]string
	order   []*jsonschema.Schema
	draft   draft
}

func (ix *schemaIndex) index(s, base *jsonschema.Schema, baseURI *url.URL, path string) {
	if s == nil {
		return
	}
	if _, seen := ix.path[s]; seen {
		return
	}
	ix.path[s] = path
	ix.order = append(ix.order, s)
	if s == base {
		ix.byURI[baseURI.String()] = s
	}
	// As the library does: draft-07 ignores an $id beside $ref, and takes
	// an $id that is only a fragment as an anchor.
	if s.ID != "" && !(ix.draft == draft7 && s.Ref != "") {
		if id, err := url.Parse(s.ID); err == nil {
			if ix.draft == draft7 && id.Fragment != "" {
				ix.anchor(base, strings.TrimPrefix(s.ID, "#"), s)
			} else {
				baseURI = baseURI.ResolveReference(id)
				baseURI.Fragment = ""
				base = s
				ix.byURI[baseURI.String()] = s
			}
		}
	}
	ix.base[s] = baseURI
	ix.baseOf[s] = base
	if ix.draft == draft2020 {
		ix.anchor(base, s.Anchor, s)
		ix.anchor(base, s.DynamicAnchor, s)
		if s.DynamicAnchor != "" {
			ix.dynamic[s.DynamicAnchor] = append(ix.dynamic[s.DynamicAnchor], s)
		}
	}
	eachChild(s, func(keyword string, c *jsonschema.Schema) {
		ix.index(c, base, baseURI, path+"/"+keyword)
	})
}

func (ix *schemaIndex) anchor(base *jsonschema.Schema, name string, s *jsonschema.Schema) {
	if name == "" {
		return
	}
	if ix.anchors[base] == nil {
		ix.anchors[base] = map[string]*jsonschema.Schema{}
	}
	if _, ok := ix.anchors[base][name]; !ok {
		ix.anchors[base][name] = s
	}
}

func (ix *schemaIndex) where(s *jsonschema.Schema) string {
	if p := ix.path[s]; p != "" {
		return p
	}
	return "the root"
}

// inPlace lists the schemas that s applies to the value s applies to.
func (ix *schemaIndex) inPlace(s *jsonschema.Schema) []*jsonschema.Schema {
	var out []*jsonschema.Schema
	add := func(c *jsonschema.Schema) {
		if c != nil {
			out = append(out, c)
		}
	}
	if ix.draft == draft7 && s.Ref != "" {
		// Draft-07 ignores every other keyword beside $ref.
		add(ix.resolve(s, s.Ref))
		return out
	}
	for _, list := range [][]*jsonschema.Schema{s.AllOf, s.AnyOf, s.OneOf} {
		for _, c := range list {
			add(c)
		}
	}
	add(s.Not)
	add(s.If)
	add(s.Then)
	add(s.Else)
	if ix.draft == draft2020 {
		for _, k := range sortedKeys(s.DependentSchemas) {
			add(s.DependentSchemas[k])
		}
	} else {
		for _, k := range sortedKeys(s.DependencySchemas) {
			add(s.DependencySchemas[k])
		}
	}
	if s.Ref != "" {
		add(ix.resolve(s, s.Ref))
	}
	if s.DynamicRef != "" {
		add(ix.resolve(s, s.DynamicRef))
		if u, err := url.Parse(s.DynamicRef); err == nil && u.Fragment != "" {
			for _, c := range ix.dynamic[u.Fragment] {
				add(c)
			}
		}
	}
	return out
}

// resolve finds the schema a reference in s names, or nil (the library
// resolved every reference already, so nil means one this index cannot
// follow, not a dangling one).
func (ix *schemaIndex) resolve(s *jsonschema.Schema, ref string) *jsonschema.Schema {
	u, err := url.Parse(ref)
	if err != nil {
		return nil
	}
	abs := ix.base[s].ResolveReference(u)
	frag := abs.Fragment
	abs.Fragment = ""
	target := ix.byURI[abs.String()]
	if target == nil {
		return nil
	}
	if frag == "" {
		return target
	}
	if !strings.HasPrefix(frag, "/") {
		return ix.anchors[target][frag]
	}
	return pointTo(target, frag)
}

// pointTo follows a JSON pointer from s through schema keywords, as the
// library's dereferenceJSONPointer does.
func pointTo(s *jsonschema.Schema, pointer string) *jsonschema.Schema {
	tokens := strings.Split(pointer, "/")[1:]
	for i := 0; i < len(tokens) && s != nil; i++ {
		key := unescapePointer(tokens[i])
		next := ""
		if i+1 < len(tokens) {
			next = unescapePointer(tokens[i+1])
		}
		index := func(list []*jsonschema.Schema) *jsonschema.Schema {
			n, err := strconv.Atoi(next)
			i++
			if err != nil || n < 0 || n >= len(list) {
				return nil
			}
			return list[n]
		}
		member := func(m map[string]*jsonschema.Schema) *jsonschema.Schema {
			i++
			return m[next]
		}
		switch key {
		case "properties":
			s = member(s.Properties)
		case "patternProperties":
			s = member(s.PatternProperties)
		case "$defs":
			s = member(s.Defs)
		case "definitions":
			s = member(s.Definitions)
		case "dependentSchemas":
			s = member(s.DependentSchemas)
		case "dependencies":
			s = member(s.DependencySchemas)
		case "allOf":
			s = index(s.AllOf)
		case "anyOf":
			s = index(s.AnyOf)
		case "oneOf":
			s = index(s.OneOf)
		case "prefixItems":
			s = index(s.PrefixItems)
		case "items":
			if s.Items == nil {
				s = index(s.ItemsArray)
			} else {
				s = s.Items
			}
		default:
			s = singleChild(s, key)
		}
	}
	return s
}

func singleChild(s *jsonschema.Schema, keyword string) *jsonschema.Schema {
	switch keyword {
	case "additionalProperties":
		return s.AdditionalProperties
	case "additionalItems":
		return s.AdditionalItems
	case "contains":
		return s.Contains
	case "propertyNames":
		return s.PropertyNames
	case "not":
		return s.Not
	case "if":
		return s.If
	case "then":
		return s.Then
	case "else":
		return s.Else
	case "unevaluatedItems":
		return s.UnevaluatedItems
	case "unevaluatedProperties":
		return s.UnevaluatedProperties
	case "contentSchema":
		return s.ContentSchema
	}
	return nil
}

// eachChild calls f for every schema directly under s, in a fixed order.
func eachChild(s *jsonschema.Schema, f func(keyword string, c *jsonschema.Schema)) {
	for _, k := range []string{"additionalProperties", "additionalItems", "contains", "propertyNames", "not",
		"if", "then", "else", "unevaluatedItems", "unevaluatedProperties", "contentSchema"} {
		if c := singleChild(s, k); c != nil {
			f(k, c)
		}
	}
	if s.Items != nil {
		f("items", s.Items)
	}
	for _, l := range []struct {
		keyword string
		list    []*jsonschema.Schema
	}{{"allOf", s.AllOf}, {"anyOf", s.AnyOf}, {"oneOf", s.OneOf}, {"items", s.ItemsArray}, {"prefixItems", s.PrefixItems}} {
		for i, c := range l.list {
			f(l.keyword+"/"+strconv.Itoa(i), c)
		}
	}
	for _, m := range []struct {
		keyword string
		schemas map[string]*jsonschema.Schema
	}{{"properties", s.Properties}, {"patternProperties", s.PatternProperties}, {"$defs", s.Defs},
		{"definitions", s.Definitions}, {"dependentSchemas", s.DependentSchemas}, {"dependencies", s.DependencySchemas}} {
		for _, name := range sortedKeys(m.schemas) {
			f(m.keyword+"/"+escapePointer(name), m.schemas[name])
		}
	}
}
