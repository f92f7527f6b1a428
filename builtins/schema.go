package builtins

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
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
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(args))
	if err != nil {
		return fmt.Errorf("arguments are not valid JSON: %v", err)
	}
	if _, ok := v.(map[string]any); !ok {
		return fmt.Errorf("arguments must be a JSON object, got %s", jsonType(v))
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
// key order or spacing: the key for cached results and llm_recovery counts.
func canonicalJSON(raw json.RawMessage) string {
	if len(bytes.TrimSpace(raw)) == 0 {
		return "{}"
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return string(raw)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return string(raw)
	}
	return string(b)
}
