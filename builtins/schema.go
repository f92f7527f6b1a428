package builtins

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

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

func compileSchema(raw json.RawMessage) (*jsonschema.Schema, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("parameters: not JSON: %w", err)
	}
	c := jsonschema.NewCompiler()
	// The default draft when $schema is absent: tool schemas are written for
	// function calling, which follows 2020-12.
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, fmt.Errorf("parameters: %w", err)
	}
	s, err := c.Compile(schemaURL)
	if err != nil {
		return nil, fmt.Errorf("parameters: not a valid JSON Schema: %w", err)
	}
	return s, nil
}

// validateArgs checks args against s. Its error message lists every
// violation with its JSON pointer, so the model can correct the call.
func validateArgs(s *jsonschema.Schema, args json.RawMessage) error {
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	if err := policy.InvalidJSON(args); err != nil {
		return fmt.Errorf("arguments are %w", err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(args))
	if err != nil {
		return fmt.Errorf("arguments are not valid JSON: %v", err)
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
	err = s.Validate(v)
	var ve *jsonschema.ValidationError
	if errors.As(err, &ve) {
		var msgs []string
		for _, c := range ve.Causes {
			msgs = append(msgs, strings.ReplaceAll(c.Error(), "\n", "; "))
		}
		if len(msgs) == 0 {
			msgs = append(msgs, ve.Error())
		}
		return errors.New("arguments do not match the schema: " + strings.Join(msgs, "; "))
	}
	return err
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
