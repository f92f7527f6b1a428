package builtins

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/symbi-dev/symbi/policy"
)

// CompileSchema reports whether raw is a valid JSON Schema (the compiler
// calls it for every tool's parameters). An empty schema is valid: it accepts
// any object.
func CompileSchema(raw json.RawMessage) error {
	_, err := compileSchema(raw)
	return err
}

const schemaURL = "symbi:///parameters.json"

// compileSchema decodes and resolves a tool's parameters schema. The JSON
// Schema library (google/jsonschema-go, which the MCP SDK links anyway)
// validates draft 2020-12 and draft-07; a schema written for draft-04,
// draft-06 or 2019-09 is first rewritten into the nearest of those two
// (upgradeSchema), and any other $schema is refused. The library checks a
// schema's shape as it decodes it but not against the meta-schema, so
// checkSchema refuses what decoding lets through (an unknown type name, a
// negative length).
func compileSchema(raw json.RawMessage) (*jsonschema.Resolved, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil, nil
	}
	if !json.Valid(raw) {
		var v any
		return nil, fmt.Errorf("parameters: not JSON: %w", json.Unmarshal(raw, &v))
	}
	d := draft2020
	if raw[0] == '{' {
		var head struct {
			Schema *string `json:"$schema"`
		}
		if err := json.Unmarshal(raw, &head); err != nil {
			return nil, fmt.Errorf("parameters: not a valid JSON Schema: $schema is not a string")
		}
		if head.Schema != nil {
			var ok bool
			if d, ok = dialectOf(*head.Schema); !ok {
				return nil, fmt.Errorf("parameters: not a valid JSON Schema: $schema %q is not a dialect symbi validates (draft-04, draft-06, draft-07, 2019-09, 2020-12)", *head.Schema)
			}
		}
	}
	if d != draft2020 && d != draft7 {
		var doc any
		if err := json.Unmarshal(raw, &doc); err != nil {
			return nil, fmt.Errorf("parameters: not JSON: %w", err)
		}
		if err := upgradeSchema(doc, d, d, true); err != nil {
			return nil, fmt.Errorf("parameters: not a valid JSON Schema: %w", err)
		}
		var err error
		if raw, err = json.Marshal(doc); err != nil {
			return nil, fmt.Errorf("parameters: %w", err)
		}
		d = d.upgraded()
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("parameters: not a valid JSON Schema: %v", strings.TrimPrefix(err.Error(), "json: "))
	}
	if err := checkSchema(&s, "", d); err != nil {
		return nil, fmt.Errorf("parameters: not a valid JSON Schema: %w", err)
	}
	// The library tells the drafts apart by the root's $schema, spelled
	// exactly as it knows it.
	s.Schema = d.uri()
	r, err := s.Resolve(&jsonschema.ResolveOptions{BaseURI: schemaURL})
	if err != nil {
		return nil, fmt.Errorf("parameters: not a valid JSON Schema: %w", err)
	}
	if err := refCycle(&s, d); err != nil {
		return nil, fmt.Errorf("parameters: not a valid JSON Schema: %w", err)
	}
	return r, nil
}

// A draft is a JSON Schema dialect a schema may name in $schema.
type draft int

const (
	draft2020 draft = iota
	draft2019
	draft7
	draft6
	draft4
)

// dialectOf reads a $schema URI as santhosh-tekuri/jsonschema did: http or
// https, with or without an empty fragment.
func dialectOf(uri string) (draft, bool) {
	u := strings.TrimSuffix(uri, "#")
	u, ok := strings.CutPrefix(u, "https://")
	if !ok {
		u, _ = strings.CutPrefix(u, "http://")
	}
	switch u {
	case "json-schema.org/draft/2020-12/schema":
		return draft2020, true
	case "json-schema.org/draft/2019-09/schema":
		return draft2019, true
	case "json-schema.org/draft-07/schema":
		return draft7, true
	case "json-schema.org/draft-06/schema":
		return draft6, true
	case "json-schema.org/draft-04/schema":
		return draft4, true
	}
	return 0, false
}

// upgraded is the draft a schema of d is validated as.
func (d draft) upgraded() draft {
	switch d {
	case draft4, draft6, draft7:
		return draft7
	}
	return draft2020
}

// uri is the library's spelling of the draft's meta-schema URI.
func (d draft) uri() string {
	if d == draft7 {
		return "http://json-schema.org/draft-07/schema#"
	}
	return "https://json-schema.org/draft/2020-12/schema"
}

// upgradeSchema rewrites, in place, a schema object of draft-04 or draft-06
// into draft-07 and one of 2019-09 into 2020-12: the keywords whose meaning
// changed between them take their later form, so validation is the same.
//   - draft-04: "id" is "$id"; a boolean exclusiveMinimum/exclusiveMaximum
//     that is true makes minimum/maximum exclusive (the number moves to
//     exclusiveMinimum/exclusiveMaximum), one that is false is dropped.
//   - 2019-09: an array "items" is "prefixItems" and "additionalItems"
//     then applies to the rest, which 2020-12 calls "items"; with a single
//     schema as "items" (or none), "additionalItems" has no effect and is
//     dropped. $recursiveRef and $recursiveAnchor, which 2020-12 replaced by
//     $dynamicRef with other rules, are refused.
//
// Keywords draft-07 added (if/then/else, $comment) and 2020-12 kept are
// validated as the later draft does; nothing else differs in validation.
// A nested $schema must name the root's draft: a schema that mixes drafts
// is refused.
func upgradeSchema(v any, from, root draft, top bool) error {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil // a boolean schema, or a shape the typed decoding refuses
	}
	if u, ok := obj["$schema"]; ok {
		s, _ := u.(string)
		if d, ok := dialectOf(s); !ok || d != root {
			return fmt.Errorf("$schema %q inside a schema of another draft", s)
		}
		if !top {
			delete(obj, "$schema")
		}
	}
	switch from {
	case draft4:
		if id, ok := obj["id"].(string); ok {
			if _, has := obj["$id"]; !has {
				obj["$id"] = id
			}
			delete(obj, "id")
		}
		for _, k := range [][2]string{{"exclusiveMinimum", "minimum"}, {"exclusiveMaximum", "maximum"}} {
			ex, ok := obj[k[0]].(bool)
			if !ok {
				continue
			}
			delete(obj, k[0])
			if bound, has := obj[k[1]]; ex && has {
				obj[k[0]] = bound
				delete(obj, k[1])
			}
		}
	case draft2019:
		for _, k := range []string{"$recursiveRef", "$recursiveAnchor"} {
			if _, ok := obj[k]; ok {
				return fmt.Errorf("%s (2019-09) is not supported: write the schema for draft 2020-12 with $dynamicRef", k)
			}
		}
		if items, ok := obj["items"].([]any); ok {
			obj["prefixItems"] = items
			delete(obj, "items")
			if rest, ok := obj["additionalItems"]; ok {
				obj["items"] = rest
			}
		}
		delete(obj, "additionalItems")
	}
	for _, k := range []string{"additionalProperties", "additionalItems", "items", "contains", "propertyNames",
		"not", "if", "then", "else", "unevaluatedItems", "unevaluatedProperties", "contentSchema"} {
		if err := upgradeSchema(obj[k], from, root, false); err != nil {
			return err
		}
	}
	for _, k := range []string{"allOf", "anyOf", "oneOf", "items", "prefixItems"} {
		list, _ := obj[k].([]any)
		for _, sub := range list {
			if err := upgradeSchema(sub, from, root, false); err != nil {
				return err
			}
		}
	}
	for _, k := range []string{"properties", "patternProperties", "definitions", "$defs", "dependentSchemas", "dependencies"} {
		m, _ := obj[k].(map[string]any)
		for _, sub := range m {
			if err := upgradeSchema(sub, from, root, false); err != nil {
				return err
			}
		}
	}
	return nil
}

// simpleTypes are the type names JSON Schema defines.
func isSimpleType(t string) bool {
	switch t {
	case "array", "boolean", "integer", "null", "number", "object", "string":
		return true
	}
	return false
}

// checkSchema refuses, in s and every schema under it, the values that the
// meta-schema forbids and typed decoding accepts: a type that is not one of
// the seven names (or a list of them that is empty or repeats one), a
// negative length or count, a multipleOf that is not positive, a required
// (or dependentRequired) list that repeats a name, and in 2020-12 an array
// of schemas as "items" (that is prefixItems). Checking the whole
// meta-schema with the library would cost a few milliseconds per process
// (it resolves eight documents); these are the checks it would add.
func checkSchema(s *jsonschema.Schema, at string, d draft) error {
	if s == nil {
		return nil
	}
	var errs []error
	bad := func(format string, args ...any) {
		where := at
		if where == "" {
			where = "the root"
		}
		errs = append(errs, fmt.Errorf("at %s: %s", where, fmt.Sprintf(format, args...)))
	}
	if at != "" && s.Schema != "" {
		if nested, ok := dialectOf(s.Schema); !ok || nested != d {
			bad("$schema %q inside a schema of another draft", s.Schema)
		}
	}
	if s.Type != "" && !isSimpleType(s.Type) {
		bad("type %q is not one of array, boolean, integer, null, number, object, string", s.Type)
	}
	if s.Types != nil {
		if len(s.Types) == 0 {
			bad("type is an empty list")
		}
		for i, t := range s.Types {
			if !isSimpleType(t) {
				bad("type %q is not one of array, boolean, integer, null, number, object, string", t)
			} else if slices.Contains(s.Types[:i], t) {
				bad("type lists %q twice", t)
			}
		}
	}
	for _, n := range []struct {
		name string
		v    *int
	}{{"minLength", s.MinLength}, {"maxLength", s.MaxLength}, {"minItems", s.MinItems}, {"maxItems", s.MaxItems},
		{"minContains", s.MinContains}, {"maxContains", s.MaxContains}, {"minProperties", s.MinProperties}, {"maxProperties", s.MaxProperties}} {
		if n.v != nil && *n.v < 0 {
			bad("%s is %d, which is negative", n.name, *n.v)
		}
	}
	if s.MultipleOf != nil && *s.MultipleOf <= 0 {
		bad("multipleOf is %v; it must be greater than 0", *s.MultipleOf)
	}
	if dup := repeated(s.Required); dup != "" {
		bad("required lists %q twice", dup)
	}
	for _, k := range sortedKeys(s.DependentRequired) {
		if dup := repeated(s.DependentRequired[k]); dup != "" {
			bad("dependentRequired[%q] lists %q twice", k, dup)
		}
	}
	if d == draft2020 && s.ItemsArray != nil {
		bad("items is an array; in draft 2020-12 it is one schema, and an array of schemas is prefixItems")
	}
	eachChild(s, func(keyword string, c *jsonschema.Schema) {
		if err := checkSchema(c, at+"/"+keyword, d); err != nil {
			errs = append(errs, err)
		}
	})
	if len(errs) == 0 {
		return nil
	}
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return errors.New(strings.Join(msgs, "; "))
}

func repeated(names []string) string {
	for i, n := range names {
		if slices.Contains(names[:i], n) {
			return n
		}
	}
	return ""
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func unescapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
}

// validateArgs checks args against s. Its error message says where the
// arguments break the schema and how, so the model can correct the call.
func validateArgs(s *jsonschema.Resolved, args json.RawMessage) error {
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	if err := policy.InvalidJSON(args); err != nil {
		return fmt.Errorf("arguments are %w", err)
	}
	v, err := decodeInstance(args)
	if err != nil {
		return err
	}
	if _, ok := v.(map[string]any); !ok {
		return fmt.Errorf("arguments must be a JSON object, got %s", jsonType(v))
	}
	if path, dup := duplicateMember(args); dup {
		return fmt.Errorf("arguments name the member %s twice; JSON readers disagree on which one counts, so neither is taken", path)
	}
	if s == nil {
		return nil
	}
	return validateValue(s, v)
}

// validateValue runs the library's validation. A panic in it (the library
// asserts its own invariants) refuses the arguments rather than ending the
// run.
func validateValue(s *jsonschema.Resolved, v any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("arguments could not be checked against the schema: %v", r)
		}
	}()
	if err := s.Validate(v); err != nil {
		return errors.New("arguments do not match the schema: " + describeViolation(err))
	}
	return nil
}

// decodeInstance decodes JSON arguments with each number exact where it can be:
// an integer that fits in 64 bits is an int64 (so a bound near 2^53 compares
// exactly), any other number a float64. A number beyond float64's range is
// refused: the library would read it as 0.
func decodeInstance(args json.RawMessage) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("arguments are not valid JSON: %v", err)
	}
	if len(bytes.TrimSpace(args[dec.InputOffset():])) > 0 {
		return nil, errors.New("arguments are not valid JSON: more than one value")
	}
	return numbers(v)
}

func numbers(v any) (any, error) {
	switch v := v.(type) {
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return i, nil
		}
		f, err := v.Float64()
		if err != nil {
			return nil, fmt.Errorf("arguments hold the number %s, which is out of range", v)
		}
		return f, nil
	case map[string]any:
		for k, e := range v {
			n, err := numbers(e)
			if err != nil {
				return nil, err
			}
			v[k] = n
		}
	case []any:
		for i, e := range v {
			n, err := numbers(e)
			if err != nil {
				return nil, err
			}
			v[i] = n
		}
	}
	return v, nil
}

// describeViolation rewrites the library's error, a chain of the schemas it
// was validating ("validating root: validating /properties/q: type: ..."),
// as the place in the arguments and what is wrong there ("at '/q': type:
// ..."), and writes its numbers as JSON does (11, not 11/1 or 11.000000).
// An anyOf's reasons follow it, each at its own place.
func describeViolation(err error) string {
	var out []string
	for _, line := range strings.Split(err.Error(), "\n") {
		var chain []string
		for {
			rest, ok := strings.CutPrefix(line, "validating ")
			if !ok {
				break
			}
			loc, msg, ok := strings.Cut(rest, ": ")
			if !ok {
				break
			}
			chain = append(chain, loc)
			line = msg
		}
		out = append(out, fmt.Sprintf("at '%s': %s", instancePath(chain), tidyNumbers(line)))
	}
	return strings.Join(out, "; ")
}

// instancePath follows a chain of schema locations (JSON pointers into the
// schema, "root" for the root) and returns the JSON pointer of the value in
// the arguments that the last one applies to. A step into properties names
// the member; a step into prefixItems the index; a step into items,
// additionalProperties or patternProperties applies to members or elements
// the chain does not name, written "*". A jump (a $ref) adds nothing.
func instancePath(chain []string) string {
	var path strings.Builder
	prev := ""
	for _, loc := range chain {
		if loc == "root" {
			loc = ""
		}
		rest, ok := strings.CutPrefix(loc, prev+"/")
		prev = loc
		if !ok {
			continue
		}
		tokens := strings.Split(rest, "/")
		for i := 0; i < len(tokens); i++ {
			switch tokens[i] {
			case "properties", "prefixItems":
				if i+1 < len(tokens) {
					path.WriteString("/" + escapePointer(unescapePointer(tokens[i+1])))
					i++
				}
			case "patternProperties", "dependentSchemas", "$defs", "definitions", "allOf", "anyOf", "oneOf":
				i++ // the next token names a schema, not a value
				if tokens[i-1] == "patternProperties" {
					path.WriteString("/*")
				}
			case "items", "additionalItems", "additionalProperties", "unevaluatedItems", "unevaluatedProperties", "contains":
				path.WriteString("/*")
			}
		}
	}
	return path.String()
}

// tidyNumbers writes the library's numbers as JSON numbers: it prints a
// value as a fraction (11/1, 1999/100) and a bound with %f (10.000000).
func tidyNumbers(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		start := i
		if s[i] == '-' && i+1 < len(s) && isDigit(s[i+1]) {
			i++
		}
		if !isDigit(s[i]) || (start > 0 && (isDigit(s[start-1]) || isLetter(s[start-1]))) {
			b.WriteByte(s[start])
			i = start + 1
			continue
		}
		i = skipDigits(s, i)
		num := s[start:i]
		if i+1 < len(s) && (s[i] == '/' || s[i] == '.') && isDigit(s[i+1]) {
			sep := s[i]
			end := skipDigits(s, i+1)
			if end == len(s) || !isLetter(s[end]) {
				switch {
				case sep == '/':
					if r, ok := new(big.Rat).SetString(s[start:end]); ok {
						num, i = ratString(r), end
					}
				case end-i-1 == 6: // %f
					if f, err := strconv.ParseFloat(s[start:end], 64); err == nil {
						num, i = strconv.FormatFloat(f, 'f', -1, 64), end
					}
				}
			}
		}
		b.WriteString(num)
	}
	return b.String()
}

func ratString(r *big.Rat) string {
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'f', -1, 64)
}

func isDigit(c byte) bool  { return '0' <= c && c <= '9' }
func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' }

func skipDigits(s string, i int) int {
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	return i
}

// duplicateMember reports the first object member that args name twice,
// as a path. Readers disagree on such JSON (Go's and most keep the last
// value, some the first, some refuse it), so the value a policy decided on
// could differ from the one a tool reads: such arguments are refused before
// the gate. args must be valid JSON (its depth is then bounded by the
// decoder's limit).
func duplicateMember(args []byte) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(args))
	var walk func(path string) (string, bool)
	walk = func(path string) (string, bool) {
		tok, err := dec.Token()
		if err != nil {
			return "", false
		}
		switch tok {
		case json.Delim('{'):
			seen := map[string]bool{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return "", false
				}
				k, _ := kt.(string)
				p := path + "." + k
				if path == "" {
					p = k
				}
				if seen[k] {
					return strconv.Quote(p), true
				}
				seen[k] = true
				if dp, dup := walk(p); dup {
					return dp, true
				}
			}
			dec.Token()
		case json.Delim('['):
			for i := 0; dec.More(); i++ {
				if dp, dup := walk(fmt.Sprintf("%s[%d]", path, i)); dup {
					return dp, true
				}
			}
			dec.Token()
		}
		return "", false
	}
	return walk("")
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	default:
		return "number"
	}
}

// canonicalJSON gives the same bytes for equal JSON values, whatever their
// key order, spacing or escapes: the key for cached results and llm_recovery
// counts, and the arguments a dead letter records. Text that is not JSON is
// its own key.
func canonicalJSON(raw json.RawMessage) string {
	if len(bytes.TrimSpace(raw)) == 0 {
		return "{}"
	}
	b, err := CanonicalJSON(raw)
	if err != nil {
		return string(raw)
	}
	return string(b)
}

// CanonicalJSON rewrites a JSON value with sorted object keys, no spacing,
// numbers as written, and <, > and & as themselves rather than escaped as
// \u003c and the like (so a dead letter reads like the call that failed).
func CanonicalJSON(raw json.RawMessage) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return marshalUnescaped(v)
}

// marshalUnescaped is json.Marshal without HTML escaping.
func marshalUnescaped(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// validatedArgs remembers arguments Validate accepted, so that the call that
// follows the gate does not check the same bytes against the same schema a
// second time (schema validation is most of the toolbox's allocation).
//
// Why this keeps the guarantee that a tool never runs with arguments that fail
// its schema: an entry is added only after validateArgs succeeded, and it is
// keyed by the tool name and a SHA-256 digest of the exact argument bytes. A
// tool's schema is compiled once in NewToolbox and never changes, and
// validation depends on nothing but the schema and the bytes, so the same
// bytes for the same tool can only pass again. Arguments a policy's modify
// decision rewrote have other bytes, so they miss and are validated in call
// (as are arguments that never went through Validate). An entry is consumed
// by the call that uses it, and the set is cleared when it grows past
// maxValidated (denied calls leave entries behind), so it stays small; a
// cleared or consumed entry only costs a repeated validation.
type validatedArgs struct {
	mu   sync.Mutex
	seen map[validatedKey]int
}

type validatedKey struct {
	tool   string
	digest [sha256.Size]byte
}

const maxValidated = 1024

func (v *validatedArgs) add(tool string, args json.RawMessage) {
	k := validatedKey{tool, sha256.Sum256(args)}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.seen == nil || len(v.seen) >= maxValidated {
		v.seen = make(map[validatedKey]int)
	}
	v.seen[k]++
}

// take reports whether args were validated for tool, consuming one entry.
func (v *validatedArgs) take(tool string, args json.RawMessage) bool {
	k := validatedKey{tool, sha256.Sum256(args)}
	v.mu.Lock()
	defer v.mu.Unlock()
	n := v.seen[k]
	switch {
	case n == 0:
		return false
	case n == 1:
		delete(v.seen, k)
	default:
		v.seen[k] = n - 1
	}
	return true
}
