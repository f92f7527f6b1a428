package cassette

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/symbi-dev/symbi/provider"
)

// FormatVersion is the version of the cassette format. It changes when a
// field changes meaning; a cassette of a newer format is refused, not
// misread.
const FormatVersion = 1

// Cassette is a recording of a run's model traffic.
//
//	{
//	  "cassette_format": 1,
//	  "match": {"ignore": ["max_output_tokens"]},
//	  "exchanges": [
//	    {"model": "model.fast", "request_digest": "sha256:…", "request": {…}, "response": {…}}
//	  ]
//	}
type Cassette struct {
	Format    int        `json:"cassette_format"`
	Match     Match      `json:"match"`
	Exchanges []Exchange `json:"exchanges"`
}

// Match says which parts of a request are compared with the recorded one.
// It travels with the recording, so a cassette replays the same way in
// every run and on every machine.
type Match struct {
	// Ignore names request fields that are not compared: model,
	// temperature, max_output_tokens, tool_choice, json, tools. A new
	// recording ignores max_output_tokens, which the budget caps from what
	// is left of it.
	Ignore []string `json:"ignore"`
	// Normalize are regular expressions (RE2): what they match in message
	// text and tool call arguments is replaced by "…" before comparing,
	// for text that varies run to run (a timestamp a tool returns).
	Normalize []string `json:"normalize,omitempty"`

	patterns []*regexp.Regexp
}

// Exchange is one model call: the request as sent and the response (or
// error) as received. Request is nil in a cassette exported from a journal,
// which keeps the conversation but not each request: such an exchange
// matches any request to its model, in its turn.
type Exchange struct {
	Model         string             `json:"model"` // the model block's address, "model.fast"
	RequestDigest string             `json:"request_digest,omitempty"`
	Request       *provider.Request  `json:"request,omitempty"`
	Response      *provider.Response `json:"response,omitempty"`
	Error         *Error             `json:"error,omitempty"`
	// Chunks are the streamed pieces as they arrived, when the recording
	// kept them (`--record-chunks`); replay streams them in order.
	Chunks []Chunk `json:"chunks,omitempty"`
}

// Chunk is one streamed piece of a response and when it arrived, in
// milliseconds after the request was sent. Replay does not wait.
type Chunk struct {
	AtMS      int64  `json:"at_ms"`
	Content   string `json:"content,omitempty"`
	Reasoning string `json:"reasoning,omitempty"`
	ToolCall  string `json:"tool_call,omitempty"`
}

// Error is a failed model call, replayed as the same *provider.Error.
type Error struct {
	Kind         provider.ErrorKind `json:"kind"`
	Detail       string             `json:"detail,omitempty"`
	StatusCode   int                `json:"status_code,omitempty"`
	RetryAfterMS int64              `json:"retry_after_ms,omitempty"`
	Message      string             `json:"message,omitempty"`
}

// providerError is the error the exchange's call returned.
func (e *Error) providerError() *provider.Error {
	pe := &provider.Error{Kind: e.Kind, Detail: e.Detail, StatusCode: e.StatusCode, RetryAfter: time.Duration(e.RetryAfterMS) * time.Millisecond}
	if e.Message != "" {
		pe.Err = errors.New(e.Message)
	}
	return pe
}

// errorOf records a failed call; an error that is not a provider error
// (a cancelled context) has no kind to replay and is recorded as what the
// engine would make of it: a transport failure.
func errorOf(err error) *Error {
	var pe *provider.Error
	if !errors.As(err, &pe) {
		return &Error{Kind: provider.TransportFailed, Message: err.Error()}
	}
	e := &Error{Kind: pe.Kind, Detail: pe.Detail, StatusCode: pe.StatusCode, RetryAfterMS: pe.RetryAfter.Milliseconds()}
	if pe.Err != nil {
		e.Message = pe.Err.Error()
	}
	return e
}

// ignorable are the request fields Match.Ignore may name.
var ignorable = []string{"json", "max_output_tokens", "model", "temperature", "tool_choice", "tools"}

// DefaultIgnore is what a new recording's match.ignore holds.
func DefaultIgnore() []string { return []string{"max_output_tokens"} }

// New returns an empty cassette of the current format with the default
// matching rules.
func New() *Cassette {
	return &Cassette{Format: FormatVersion, Match: Match{Ignore: DefaultIgnore()}, Exchanges: []Exchange{}}
}

// Load reads and parses a cassette file. Errors name the file, and a
// syntax error its line and column.
func Load(path string) (*Cassette, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	c, err := Parse(b)
	if err != nil {
		var se *syntaxError
		if errors.As(err, &se) {
			return nil, fmt.Errorf("%s:%d:%d: %s", path, se.line, se.col, se.msg)
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// syntaxError is JSON that cannot be decoded, at a line and column.
type syntaxError struct {
	line, col int
	msg       string
}

func (e *syntaxError) Error() string { return fmt.Sprintf("%d:%d: %s", e.line, e.col, e.msg) }

// Parse reads a cassette. Unknown fields are errors, so a misspelt field is
// not silently ignored; other mistakes name the field
// ("exchanges[2].error.kind: ...").
func Parse(data []byte) (*Cassette, error) {
	var c Cassette
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("empty input, want a JSON object")
		}
		return nil, positioned(data, err, int(dec.InputOffset()))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		line, col := lineCol(data, int(dec.InputOffset()))
		return nil, &syntaxError{line: line, col: col, msg: "unexpected data after the JSON object"}
	}
	if err := c.check(); err != nil {
		return nil, err
	}
	return &c, nil
}

// positioned turns a decoding error into one with a line and column: the
// offending byte's for a syntax error, else where the decoder stopped
// (after the field in question).
func positioned(data []byte, err error, stopped int) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	msg := strings.TrimPrefix(err.Error(), "json: ")
	switch {
	case errors.As(err, &se):
		line, col := lineCol(data, int(se.Offset)-1)
		return &syntaxError{line: line, col: col, msg: msg}
	case errors.As(err, &te):
		line, col := lineCol(data, int(te.Offset))
		field := te.Field
		if field == "" {
			field = "the cassette"
		}
		return &syntaxError{line: line, col: col, msg: fmt.Sprintf("%s: want %s, got JSON %s", field, goTypeWord(te.Type.String()), te.Value)}
	case errors.Is(err, io.ErrUnexpectedEOF):
		line, col := lineCol(data, len(data))
		return &syntaxError{line: line, col: col, msg: "unexpected end of the JSON input"}
	}
	if name, ok := strings.CutPrefix(msg, "unknown field "); ok {
		// The decoder read the whole value before it found the field: find
		// where the field is written.
		if unq, err := strconv.Unquote(name); err == nil {
			if loc := regexp.MustCompile(regexp.QuoteMeta(strconv.Quote(unq)) + `\s*:`).FindIndex(data); loc != nil {
				stopped = loc[0]
			}
		}
	}
	line, col := lineCol(data, stopped)
	return &syntaxError{line: line, col: col, msg: msg}
}

func goTypeWord(t string) string {
	switch {
	case strings.HasPrefix(t, "[]"):
		return "an array"
	case strings.Contains(t, "int"):
		return "an integer"
	case strings.Contains(t, "float"):
		return "a number"
	case t == "string" || t == "*string" || strings.HasSuffix(t, "Role") || strings.HasSuffix(t, "ErrorKind"):
		return "a string"
	case t == "bool":
		return "a boolean"
	}
	return "an object"
}

// lineCol is the 1-based line and column of byte offset off.
func lineCol(data []byte, off int) (int, int) {
	off = min(max(off, 0), len(data))
	before := data[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := off - bytes.LastIndexByte(before, '\n')
	return line, col
}

// check reports the first mistake a decoder cannot see, and compiles the
// normalizing expressions.
func (c *Cassette) check() error {
	switch {
	case c.Format == 0:
		return errors.New("cassette_format: missing; this is not a cassette (want \"cassette_format\": 1)")
	case c.Format > FormatVersion:
		return fmt.Errorf("cassette_format: %d is newer than this symbi reads (%d): upgrade symbi", c.Format, FormatVersion)
	case c.Format < 0:
		return fmt.Errorf("cassette_format: %d is not a format", c.Format)
	}
	for i, f := range c.Match.Ignore {
		if !slices.Contains(ignorable, f) {
			return fmt.Errorf("match.ignore[%d]: %q is not a request field that can be ignored (%s)", i, f, strings.Join(ignorable, ", "))
		}
	}
	c.Match.patterns = nil
	for i, expr := range c.Match.Normalize {
		re, err := regexp.Compile(expr)
		if err != nil {
			return fmt.Errorf("match.normalize[%d]: %v", i, err)
		}
		if re.MatchString("") {
			return fmt.Errorf("match.normalize[%d]: %q matches the empty string, so it would change every text", i, expr)
		}
		c.Match.patterns = append(c.Match.patterns, re)
	}
	if c.Exchanges == nil {
		c.Exchanges = []Exchange{}
	}
	for i := range c.Exchanges {
		if err := c.Exchanges[i].check(); err != nil {
			return fmt.Errorf("exchanges[%d]%w", i, err)
		}
	}
	return nil
}

// fieldError is a mistake at a path below an exchange; check prefixes the
// exchange's index.
type fieldError struct {
	path string
	err  error
}

func (e *fieldError) Error() string { return e.path + ": " + e.err.Error() }
func (e *fieldError) Unwrap() error { return e.err }

func at(path, format string, args ...any) error {
	return &fieldError{path: path, err: fmt.Errorf(format, args...)}
}

var roles = []provider.Role{provider.System, provider.User, provider.Assistant, provider.ToolRole}

func (x *Exchange) check() error {
	if x.Model == "" {
		return at(".model", "the model's address is required (\"model.fast\")")
	}
	if (x.Response == nil) == (x.Error == nil) {
		return at("", "an exchange has exactly one of response and error")
	}
	if r := x.Request; r != nil {
		for i, m := range r.Messages {
			if !slices.Contains(roles, m.Role) {
				return at(fmt.Sprintf(".request.messages[%d].role", i), "%q is not one of system, user, assistant, tool", m.Role)
			}
		}
		if r.MaxOutputTokens < 0 {
			return at(".request.max_output_tokens", "must not be negative")
		}
		for i, t := range r.Tools {
			if t.Name == "" {
				return at(fmt.Sprintf(".request.tools[%d].name", i), "a tool needs a name")
			}
			if len(t.Parameters) > 0 && !json.Valid(t.Parameters) {
				return at(fmt.Sprintf(".request.tools[%d].parameters", i), "not valid JSON")
			}
		}
	}
	if e := x.Error; e != nil {
		if !slices.Contains(errorKinds, e.Kind) {
			return at(".error.kind", "%q is not a provider error kind", e.Kind)
		}
		if e.StatusCode < 0 || e.RetryAfterMS < 0 {
			return at(".error", "status_code and retry_after_ms must not be negative")
		}
	}
	if r := x.Response; r != nil {
		u := r.Usage
		if u.PromptTokens < 0 || u.CompletionTokens < 0 || u.TotalTokens < 0 || u.CacheReadTokens < 0 || u.CacheWriteTokens < 0 {
			return at(".response.usage", "token counts must not be negative")
		}
		for i, tc := range r.ToolCalls {
			if tc.Name == "" {
				return at(fmt.Sprintf(".response.tool_calls[%d].name", i), "a tool call needs a name")
			}
		}
	}
	for i, ch := range x.Chunks {
		if ch.AtMS < 0 {
			return at(fmt.Sprintf(".chunks[%d].at_ms", i), "must not be negative")
		}
	}
	return nil
}

var errorKinds = []provider.ErrorKind{
	provider.MissingAPIKey, provider.AuthenticationFailed, provider.RateLimited,
	provider.ModelUnavailable, provider.TransportFailed, provider.Refusal,
	provider.Timeout, provider.MalformedResponse, provider.EmptyResponse,
	provider.InvalidRequest, provider.ResponseTooLarge,
}

// Encode is the cassette's file form: indented JSON with keys in a fixed
// order (struct order; maps sorted), HTML characters unescaped, a newline at
// the end, and each request's digest computed afresh. The same cassette
// always encodes to the same bytes.
func (c *Cassette) Encode() ([]byte, error) {
	out := *c
	out.Exchanges = make([]Exchange, len(c.Exchanges))
	for i, x := range c.Exchanges {
		if x.Request != nil {
			x.RequestDigest = c.Match.Digest(*x.Request)
		} else {
			x.RequestDigest = ""
		}
		out.Exchanges[i] = x
	}
	if out.Match.Ignore == nil {
		out.Match.Ignore = []string{}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Save writes the cassette to path atomically, making its directory: a
// reader, or a run killed while it writes, sees the old file or the new
// one, never half of one.
func (c *Cassette) Save(path string) error {
	b, err := c.Encode()
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("saving the cassette: %w", err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(b)
	if serr := tmp.Sync(); err == nil {
		err = serr
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("saving the cassette: %w", err)
	}
	return nil
}
