package plan

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/symbi-dev/symbi/internal/jsonenc"
)

// Duration is a time.Duration written as a Go duration string ("30s").
type Duration time.Duration

func (d Duration) Std() time.Duration { return time.Duration(d) }

func (d Duration) String() string { return time.Duration(d).String() }

func (d Duration) MarshalJSON() ([]byte, error) { return d.appendJSON(nil) }

// appendJSON writes what json.Marshal(d.String()) does, HTML escaping
// included, as MarshalJSON always has: a plan's bytes do not change.
func (d Duration) appendJSON(b []byte) ([]byte, error) {
	return jsonenc.AppendStringEscapeHTML(b, time.Duration(d).String()), nil
}

func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration: %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// Range is a source position, written "file.hcl:12:3". Filename is relative
// to the configuration directory.
type Range struct {
	Filename string
	Line     int
	Column   int
}

func (r Range) String() string {
	if r.Filename == "" {
		return ""
	}
	return fmt.Sprintf("%s:%d:%d", r.Filename, r.Line, r.Column)
}

func (r Range) MarshalJSON() ([]byte, error) { return r.appendJSON(nil) }

// appendJSON writes what json.Marshal(r.String()) does, HTML escaping
// included, as MarshalJSON always has: a plan's bytes do not change.
func (r Range) appendJSON(b []byte) ([]byte, error) {
	return jsonenc.AppendStringEscapeHTML(b, r.String()), nil
}

func (r *Range) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("range: %w", err)
	}
	if s == "" {
		*r = Range{}
		return nil
	}
	i := strings.LastIndexByte(s, ':')
	j := -1
	if i > 0 {
		j = strings.LastIndexByte(s[:i], ':')
	}
	if j <= 0 {
		return fmt.Errorf("range %q: want file:line:column", s)
	}
	line, err1 := strconv.Atoi(s[j+1 : i])
	col, err2 := strconv.Atoi(s[i+1:])
	if err1 != nil || err2 != nil {
		return fmt.Errorf("range %q: want file:line:column", s)
	}
	*r = Range{Filename: s[:j], Line: line, Column: col}
	return nil
}

// Expr is a deferred expression: HCL source text evaluated by the engine at
// run time, with the range it came from.
type Expr struct {
	Source string `json:"expr"`
	Range  Range  `json:"range"`
}

// String is a string known at compile time, or a deferred expression (any
// expression that calls env()). Its JSON form is a plain string, or an Expr
// object when deferred, so a secret never enters a plan.
type String struct {
	Value    string
	Deferred *Expr
}

// Lit returns a String known at compile time.
func Lit(s string) String { return String{Value: s} }

func (s String) IsZero() bool { return s.Value == "" && s.Deferred == nil }

func (s String) MarshalJSON() ([]byte, error) { return s.appendJSON(nil) }

// appendJSON writes what json.Marshal of the value or of the Expr does,
// HTML escaping included (where an Expr stands on its own in a plan, its
// expr is not escaped), as MarshalJSON always has: a plan's bytes do not
// change.
func (s String) appendJSON(b []byte) ([]byte, error) {
	if e := s.Deferred; e != nil {
		b = append(b, `{"expr":`...)
		b = jsonenc.AppendStringEscapeHTML(b, e.Source)
		b = append(b, `,"range":`...)
		b = jsonenc.AppendStringEscapeHTML(b, e.Range.String())
		return append(b, '}'), nil
	}
	return jsonenc.AppendStringEscapeHTML(b, s.Value), nil
}

func (s *String) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '{' {
		var e Expr
		if err := json.Unmarshal(b, &e); err != nil {
			return err
		}
		*s = String{Deferred: &e}
		return nil
	}
	*s = String{}
	return json.Unmarshal(b, &s.Value)
}

// MaxInlineText is the size up to which a file's text is kept in the plan
// beside its hash. Larger files are read again, and their hash checked, when
// the plan is loaded.
const MaxInlineText = 16 << 10

// FileRef is a file the compiler read: its path relative to the configuration
// directory, its sha256, and its text when short.
type FileRef struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	Text   string `json:"text,omitempty"`
}

// NewFileRef records a file's content.
func NewFileRef(path string, content []byte) FileRef {
	sum := sha256.Sum256(content)
	ref := FileRef{Path: filepath.ToSlash(path), SHA256: hex.EncodeToString(sum[:])}
	// JSON cannot carry invalid UTF-8: such a file is read again when needed.
	if len(content) <= MaxInlineText && utf8.Valid(content) {
		ref.Text = string(content)
	}
	return ref
}

// Load returns the file's content: the inline text, or the file read from
// baseDir with its hash checked, so a plan never runs a file that changed
// after it was compiled.
func (f FileRef) Load(baseDir string) ([]byte, error) {
	if f.Text != "" || f.SHA256 == emptySHA256 {
		return []byte(f.Text), nil
	}
	b, err := os.ReadFile(filepath.Join(baseDir, filepath.FromSlash(f.Path)))
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(b)
	if got := hex.EncodeToString(sum[:]); got != f.SHA256 {
		return nil, fmt.Errorf("%s changed since the plan was made (sha256 %s, plan has %s)", f.Path, got[:12], f.SHA256[:min(12, len(f.SHA256))])
	}
	return b, nil
}

const emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// Encode writes the canonical JSON form of p: indented, stable, with a final
// newline. Map keys are sorted by encoding/json; lists are sorted by the
// compiler.
//
// It is what a json.Encoder with SetEscapeHTML(false) and SetIndent("", "  ")
// writes, byte for byte, by code internal/jsongen generated (json_gen.go):
// encoding/json's first look at the plan's fifty types cost every `symbi
// run` about a tenth of its time.
func Encode(p *Plan) ([]byte, error) {
	b, err := appendJSONPlan(make([]byte, 0, 4096), p)
	if err != nil {
		return nil, err
	}
	b = append(b, '\n')
	var buf bytes.Buffer
	buf.Grow(2 * len(b))
	if err := json.Indent(&buf, b, "", "  "); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Decode reads a plan's JSON form and checks its format version.
func Decode(b []byte) (*Plan, error) {
	var p Plan
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("reading plan: %w", err)
	}
	if p.FormatVersion != FormatVersion {
		return nil, fmt.Errorf("plan format_version %d is not supported (this symbi reads %d)", p.FormatVersion, FormatVersion)
	}
	// Encode indents the JSON values the plan holds as they are (a tool's
	// schema, a variable's value, a policy test's action); the compiler
	// made them compact, and a decoded plan must hold the same bytes, or a
	// run of it estimates a tool's schema at another size than a run of
	// the compiled plan.
	for i := range p.Tools {
		p.Tools[i].Parameters = compact(p.Tools[i].Parameters)
	}
	for i := range p.Variables {
		p.Variables[i].Value = compact(p.Variables[i].Value)
	}
	for i := range p.PolicyTests {
		p.PolicyTests[i].Action = compact(p.PolicyTests[i].Action)
	}
	return &p, nil
}

// compact is raw without the indentation Encode gave it.
func compact(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return raw
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return raw
	}
	return buf.Bytes()
}
