package scripted

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/provider"
	"github.com/symbi-dev/symbi/stdlib"
)

// What a Model does when no unconsumed turn fits a request.
const (
	OnExhaustedError      = "error"       // the call fails with ErrExhausted (the default)
	OnExhaustedRepeatLast = "repeat_last" // the last fitting turn of the script is played again
)

// Script is a parsed script: the turns in the order written.
type Script struct {
	Turns       []Turn
	OnExhausted string
}

// Turn is one scripted model answer. Exactly one of three shapes: an answer
// (Content and/or ToolCalls), an Error, or empty (which plays back as an
// EmptyResponse error, as a real provider's empty turn does).
type Turn struct {
	// When, if set, restricts the turn to requests whose latest user or tool
	// message matches it.
	When *regexp.Regexp
	// WhenTemperature, if set, restricts the turn to requests with this
	// temperature, so best-of-N candidates that vary it get their own turns.
	WhenTemperature *float64

	Content      string
	Chunks       []string // content deltas, in order; they join to Content
	ToolCalls    []provider.ToolCall
	Usage        *provider.Usage // nil: estimated from the request and the output
	Latency      time.Duration   // waited before the first delta
	FinishReason string
	Error        *provider.Error
}

// ErrExhausted is the cause of the error a Model returns when no turn is left
// for a request and the script says on_exhausted "error".
var ErrExhausted = errors.New("script exhausted: no unconsumed turn matches the request")

// The JSON form. Each level is decoded on its own so that an error can name
// its position.
type scriptJSON struct {
	Turns       []json.RawMessage `json:"turns"`
	OnExhausted string            `json:"on_exhausted"`
}

type turnJSON struct {
	When            *string           `json:"when"`
	WhenTemperature *float64          `json:"when_temperature"`
	Content         string            `json:"content"`
	Chunks          []string          `json:"chunks"`
	ToolCalls       []json.RawMessage `json:"tool_calls"`
	Usage           json.RawMessage   `json:"usage"`
	Latency         string            `json:"latency"`
	FinishReason    string            `json:"finish_reason"`
	Error           json.RawMessage   `json:"error"`
}

type toolCallJSON struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

type usageJSON struct {
	PromptTokens     *int64 `json:"prompt_tokens"`
	CompletionTokens *int64 `json:"completion_tokens"`
	TotalTokens      *int64 `json:"total_tokens"`
}

type errorJSON struct {
	Kind       string `json:"kind"`
	Message    string `json:"message"`
	Detail     string `json:"detail"`
	StatusCode int    `json:"status_code"`
	RetryAfter string `json:"retry_after"`
}

// errorKinds lists the kinds a script may name, in the order the error
// message gives them.
func errorKinds() []provider.ErrorKind {
	return []provider.ErrorKind{
		provider.MissingAPIKey, provider.AuthenticationFailed, provider.RateLimited,
		provider.ModelUnavailable, provider.TransportFailed, provider.Refusal,
		provider.Timeout, provider.MalformedResponse, provider.EmptyResponse,
		provider.InvalidRequest, provider.ResponseTooLarge,
	}
}

func isTimeoutDetail(d string) bool {
	return d == "total" || d == "connect" || d == "first_event" || d == "idle"
}

// Load reads and parses a script file and returns a Model that plays it.
func Load(path string) (*Model, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	s, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return New(s), nil
}

// Parse reads a script. Unknown fields are errors, so a misspelt field is
// not silently ignored.
func Parse(data []byte) (*Script, error) {
	var sj scriptJSON
	if err := decodeStrict(data, &sj); err != nil {
		return nil, err
	}
	s := &Script{OnExhausted: sj.OnExhausted}
	switch sj.OnExhausted {
	case "":
		s.OnExhausted = OnExhaustedError
	case OnExhaustedError, OnExhaustedRepeatLast:
	default:
		return nil, fmt.Errorf("on_exhausted: %q is not one of %q, %q", sj.OnExhausted, OnExhaustedError, OnExhaustedRepeatLast)
	}
	if len(sj.Turns) == 0 {
		return nil, errors.New("turns: at least one turn is required")
	}
	for i, raw := range sj.Turns {
		t, err := parseTurn(raw, i)
		if err != nil {
			return nil, fmt.Errorf("turns[%d]%w", i, err)
		}
		s.Turns = append(s.Turns, t)
	}
	return s, nil
}

// posError prefixes a path segment, so that nested errors read
// "turns[3].tool_calls[0]: name is required".
type posError struct {
	path string
	err  error
}

func (e *posError) Error() string { return e.path + ": " + e.err.Error() }
func (e *posError) Unwrap() error { return e.err }

func at(path string, err error) error {
	if p, ok := err.(*posError); ok {
		return &posError{path: path + p.path, err: p.err}
	}
	return &posError{path: path, err: err}
}

func parseTurn(raw json.RawMessage, index int) (Turn, error) {
	var tj turnJSON
	if err := decodeStrict(raw, &tj); err != nil {
		return Turn{}, at("", err)
	}
	var t Turn
	if tj.When != nil {
		re, err := regexp.Compile(*tj.When)
		if err != nil {
			return Turn{}, at(".when", err)
		}
		t.When = re
	}
	t.WhenTemperature = tj.WhenTemperature
	t.Content = tj.Content
	if len(tj.Chunks) > 0 {
		joined := strings.Join(tj.Chunks, "")
		switch {
		case t.Content == "":
			t.Content = joined
		case t.Content != joined:
			return Turn{}, at(".chunks", errors.New("the chunks do not join to content (leave content out, or make them agree)"))
		}
		t.Chunks = tj.Chunks
	}
	for i, rawCall := range tj.ToolCalls {
		c, err := parseToolCall(rawCall, index, i)
		if err != nil {
			return Turn{}, at(fmt.Sprintf(".tool_calls[%d]", i), err)
		}
		t.ToolCalls = append(t.ToolCalls, c)
	}
	if len(tj.Usage) > 0 && !isNull(tj.Usage) {
		u, err := parseUsage(tj.Usage)
		if err != nil {
			return Turn{}, at(".usage", err)
		}
		t.Usage = u
	}
	if tj.Latency != "" {
		d, err := stdlib.ParseDuration(tj.Latency)
		if err != nil {
			return Turn{}, at(".latency", err)
		}
		t.Latency = d
	}
	t.FinishReason = tj.FinishReason
	if len(tj.Error) > 0 && !isNull(tj.Error) {
		if t.Content != "" || len(t.ToolCalls) > 0 {
			return Turn{}, at(".error", errors.New("a turn with an error has no content or tool_calls"))
		}
		e, err := parseError(tj.Error)
		if err != nil {
			return Turn{}, at(".error", err)
		}
		t.Error = e
	}
	return t, nil
}

func parseToolCall(raw json.RawMessage, turn, index int) (provider.ToolCall, error) {
	var cj toolCallJSON
	if err := decodeStrict(raw, &cj); err != nil {
		return provider.ToolCall{}, err
	}
	if cj.Name == "" {
		return provider.ToolCall{}, errors.New("name is required")
	}
	c := provider.ToolCall{ID: cj.ID, Name: cj.Name, Arguments: "{}"}
	if c.ID == "" {
		c.ID = fmt.Sprintf("call_%d_%d", turn, index)
	}
	args := bytes.TrimSpace(cj.Arguments)
	switch {
	case len(args) == 0 || isNull(args):
	case args[0] == '"':
		// A string is the arguments' text exactly as a model would send it,
		// valid JSON or not, so tests can exercise invalid arguments.
		var s string
		if err := json.Unmarshal(args, &s); err != nil {
			return provider.ToolCall{}, at(".arguments", err)
		}
		c.Arguments = s
	default:
		var buf bytes.Buffer
		if err := json.Compact(&buf, args); err != nil {
			return provider.ToolCall{}, at(".arguments", err)
		}
		c.Arguments = buf.String()
	}
	return c, nil
}

func parseUsage(raw json.RawMessage) (*provider.Usage, error) {
	var uj usageJSON
	if err := decodeStrict(raw, &uj); err != nil {
		return nil, err
	}
	var u provider.Usage
	for _, f := range []struct {
		name string
		src  *int64
		dst  *int64
	}{
		{"prompt_tokens", uj.PromptTokens, &u.PromptTokens},
		{"completion_tokens", uj.CompletionTokens, &u.CompletionTokens},
		{"total_tokens", uj.TotalTokens, &u.TotalTokens},
	} {
		if f.src == nil {
			continue
		}
		if *f.src < 0 {
			return nil, fmt.Errorf("%s: must not be negative", f.name)
		}
		*f.dst = *f.src
	}
	if uj.TotalTokens == nil {
		u.TotalTokens = u.PromptTokens + u.CompletionTokens
	}
	return &u, nil
}

func parseError(raw json.RawMessage) (*provider.Error, error) {
	var ej errorJSON
	if err := decodeStrict(raw, &ej); err != nil {
		return nil, err
	}
	kind := provider.ErrorKind(ej.Kind)
	if !slices.Contains(errorKinds(), kind) {
		var names []string
		for _, k := range errorKinds() {
			names = append(names, string(k))
		}
		return nil, fmt.Errorf("kind: %q is not one of %s", ej.Kind, strings.Join(names, ", "))
	}
	e := &provider.Error{Kind: kind, Detail: ej.Detail, StatusCode: ej.StatusCode}
	if kind == provider.Timeout && e.Detail != "" && !isTimeoutDetail(e.Detail) {
		return nil, fmt.Errorf("detail: a timeout's detail is one of total, connect, first_event, idle, not %q", e.Detail)
	}
	if ej.StatusCode != 0 && (ej.StatusCode < 100 || ej.StatusCode > 599) {
		return nil, fmt.Errorf("status_code: %d is not an HTTP status", ej.StatusCode)
	}
	if ej.RetryAfter != "" {
		d, err := stdlib.ParseDuration(ej.RetryAfter)
		if err != nil {
			return nil, fmt.Errorf("retry_after: %w", err)
		}
		e.RetryAfter = d
	}
	msg := ej.Message
	if msg == "" {
		msg = "scripted " + ej.Kind
	}
	e.Err = errors.New(msg)
	return e, nil
}

// decodeStrict decodes exactly one JSON value into v, rejecting unknown
// fields and trailing data.
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return errors.New("empty input, want a JSON object")
		}
		return cleanJSONError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("unexpected data after the JSON object")
	}
	return nil
}

// cleanJSONError turns encoding/json's messages into ones that name the
// field in the script's words.
func cleanJSONError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field != "" {
			return fmt.Errorf("%s: want %s, got JSON %s", te.Field, describeType(te.Type.String()), te.Value)
		}
		return fmt.Errorf("want %s, got JSON %s", describeType(te.Type.String()), te.Value)
	}
	msg := strings.TrimPrefix(err.Error(), "json: ")
	return errors.New(msg)
}

func describeType(goType string) string {
	switch {
	case strings.HasPrefix(goType, "[]"):
		return "an array"
	case strings.Contains(goType, "int"):
		return "an integer"
	case goType == "string" || goType == "*string":
		return "a string"
	default:
		return "an object"
	}
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// FromPlan returns the Model for a compiled `provider = "scripted"` model
// block, reading its script from the plan (or from baseDir, the
// configuration directory, with its hash checked).
func FromPlan(m plan.Model, baseDir string) (*Model, error) {
	if m.Script == nil {
		return nil, fmt.Errorf("%s: a scripted model needs a script", m.Address)
	}
	data, err := m.Script.Load(baseDir)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", m.Address, err)
	}
	s, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", m.Script.Path, err)
	}
	return New(s), nil
}
