package symbitest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"
)

// TextPrinter writes results as people read them, one run at a time:
//
//	examples/quickstart.symbitest.hcl
//	  run "multiplies"... pass
//	  run "divides"... fail (run 20261202T152141Z-187b2c5d)
//
//	Error: Test assertion failed
//	  ...
type TextPrinter struct {
	W       io.Writer
	Sources map[string]*hcl.File
	Width   uint // of the terminal, for the diagnostics' snippets; 0: none
	Color   bool

	file  *File
	blank bool // the last line written was empty
}

// Result writes one run's line and, when it did not pass, its diagnostics
// and where to inspect it.
func (p *TextPrinter) Result(rr *RunResult) {
	r := rr.Run
	if p.file != r.File {
		if p.file != nil && !p.blank {
			fmt.Fprintln(p.W)
		}
		fmt.Fprintln(p.W, r.File.Path)
		p.file = r.File
	}
	fmt.Fprintf(p.W, "  run %q... %s%s\n", r.Name, rr.Status, p.extra(rr))
	p.blank = false
	if rr.Status == Pass {
		return
	}
	ds := rr.Diagnostics()
	if len(ds) == 0 {
		return
	}
	fmt.Fprintln(p.W)
	_ = hcl.NewDiagnosticTextWriter(p.W, p.Sources, p.Width, p.Color).WriteDiagnostics(ds)
	p.blank = true
	if ids := rr.RunIDs(); len(ids) > 0 && rr.Status != Skip {
		for _, rep := range rr.Repetitions {
			if rep.Status != Pass && rep.RunID != "" {
				fmt.Fprintf(p.W, "Inspect the run: symbi runs show %s --state-dir %s\n\n", rep.RunID, rr.StateDir)
				p.blank = true
				break
			}
		}
	}
}

func (p *TextPrinter) extra(rr *RunResult) string {
	var parts []string
	r := rr.Run
	if r.Repeat > 1 && rr.Status != Error && rr.Status != Skip {
		parts = append(parts, fmt.Sprintf("%d of %d repetitions passed, %s; needs %s", rr.Passed, r.Repeat,
			percent(float64(rr.Passed)/float64(r.Repeat)), percent(r.PassRate)))
	}
	if rr.Updated {
		parts = append(parts, "cassette "+r.Cassette+" recorded")
	}
	if rr.Status == Fail || rr.Status == Error {
		for _, rep := range rr.Repetitions {
			if rep.Status != Pass && rep.RunID != "" {
				parts = append(parts, "run "+rep.RunID)
				break
			}
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, "; ") + ")"
}

// Summary writes the suite's last line.
func (p *TextPrinter) Summary(rep *Report) {
	word := "Success!"
	if rep.Status() > Pass {
		word = "Failure!"
	}
	if !p.blank {
		fmt.Fprintln(p.W)
	}
	fmt.Fprintf(p.W, "%s %s\n", word, counts(rep))
}

func counts(rep *Report) string {
	s := fmt.Sprintf("%d passed, %d failed", rep.Count(Pass), rep.Count(Fail))
	if n := rep.Count(Error); n > 0 {
		s += fmt.Sprintf(", %d %s", n, plural(n, "error", "errors"))
	}
	if n := rep.Count(Skip); n > 0 {
		s += fmt.Sprintf(", %d skipped", n)
	}
	return s + "."
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// JSON lines: one object per run as it finishes, a summary at the end; a
// suite that does not load is its diagnostics and a summary of status
// "invalid".

// JSONRun is a run's line.
type JSONRun struct {
	Type            string           `json:"type"` // "run"
	File            string           `json:"file"`
	Run             string           `json:"run"`
	Status          string           `json:"status"` // pass | fail | error | skip
	RunIDs          []string         `json:"run_ids"`
	StateDir        string           `json:"state_dir"`
	Repetitions     int              `json:"repetitions"`
	Passed          int              `json:"passed"`
	PassRate        float64          `json:"pass_rate"`
	CassetteUpdated bool             `json:"cassette_updated,omitempty"`
	DurationMS      int64            `json:"duration_ms"`
	Diagnostics     []JSONDiagnostic `json:"diagnostics"`
}

// JSONDiagnostic is a diagnostic with its range and, for a failed
// assertion, the values of the condition's references.
type JSONDiagnostic struct {
	Type     string                     `json:"type,omitempty"` // "diagnostic" on a line of its own
	Severity string                     `json:"severity"`
	Summary  string                     `json:"summary"`
	Detail   string                     `json:"detail,omitempty"`
	Range    *JSONRange                 `json:"range,omitempty"`
	Values   map[string]json.RawMessage `json:"values,omitempty"`
}

// JSONRange is a diagnostic's place.
type JSONRange struct {
	Filename string `json:"filename"`
	Line     int    `json:"line"`
	Column   int    `json:"column"`
	EndLine  int    `json:"end_line"`
	EndCol   int    `json:"end_column"`
}

// JSONSummary is the last line.
type JSONSummary struct {
	Type       string `json:"type"`   // "summary"
	Status     string `json:"status"` // pass | fail | error | invalid
	Passed     int    `json:"passed"`
	Failed     int    `json:"failed"`
	Errors     int    `json:"errors"`
	Skipped    int    `json:"skipped"`
	DurationMS int64  `json:"duration_ms"`
}

// WriteJSONResult writes a run's line.
func WriteJSONResult(w io.Writer, rr *RunResult) error {
	out := JSONRun{Type: "run", File: rr.Run.File.Path, Run: rr.Run.Name, Status: rr.Status.String(), RunIDs: rr.RunIDs(),
		StateDir: rr.StateDir, Repetitions: rr.Run.Repeat, Passed: rr.Passed, PassRate: rr.Run.PassRate,
		CassetteUpdated: rr.Updated, DurationMS: rr.Elapsed.Milliseconds(), Diagnostics: JSONDiagnostics(rr.Diagnostics())}
	if out.RunIDs == nil {
		out.RunIDs = []string{}
	}
	return jsonLine(w, out)
}

// WriteJSONSummary writes the last line.
func WriteJSONSummary(w io.Writer, rep *Report) error {
	status := rep.Status()
	if status < Pass {
		status = Pass
	}
	return jsonLine(w, JSONSummary{Type: "summary", Status: status.String(), Passed: rep.Count(Pass), Failed: rep.Count(Fail),
		Errors: rep.Count(Error), Skipped: rep.Count(Skip), DurationMS: rep.Elapsed.Milliseconds()})
}

// WriteJSONInvalid writes the diagnostics of a suite that does not load,
// and its summary.
func WriteJSONInvalid(w io.Writer, diags hcl.Diagnostics) error {
	for _, d := range JSONDiagnostics(diags) {
		d.Type = "diagnostic"
		if err := jsonLine(w, d); err != nil {
			return err
		}
	}
	return jsonLine(w, JSONSummary{Type: "summary", Status: "invalid"})
}

// JSONDiagnostics is diags in the JSON form.
func JSONDiagnostics(diags hcl.Diagnostics) []JSONDiagnostic {
	out := []JSONDiagnostic{}
	for _, d := range diags {
		jd := JSONDiagnostic{Severity: "error", Summary: d.Summary, Detail: d.Detail}
		if d.Severity == hcl.DiagWarning {
			jd.Severity = "warning"
		}
		if s := d.Subject; s != nil {
			jd.Range = &JSONRange{Filename: s.Filename, Line: s.Start.Line, Column: s.Start.Column, EndLine: s.End.Line, EndCol: s.End.Column}
		}
		if d.Expression != nil && d.EvalContext != nil {
			for _, tr := range d.Expression.Variables() {
				v, diags := tr.TraverseAbs(d.EvalContext)
				if diags.HasErrors() || !v.IsWhollyKnown() {
					continue
				}
				b, err := ctyjson.Marshal(v, cty.DynamicPseudoType)
				if err != nil {
					continue
				}
				var dyn struct {
					Value json.RawMessage `json:"value"`
				}
				if json.Unmarshal(b, &dyn) != nil {
					continue
				}
				if jd.Values == nil {
					jd.Values = map[string]json.RawMessage{}
				}
				jd.Values[traversalString(tr)] = dyn.Value
			}
		}
		out = append(out, jd)
	}
	return out
}

// traversalString is a traversal as written: run.tool_calls[0].name.
func traversalString(tr hcl.Traversal) string {
	var b strings.Builder
	for _, step := range tr {
		switch s := step.(type) {
		case hcl.TraverseRoot:
			b.WriteString(s.Name)
		case hcl.TraverseAttr:
			b.WriteString("." + s.Name)
		case hcl.TraverseIndex:
			if s.Key.Type() == cty.String {
				fmt.Fprintf(&b, "[%q]", s.Key.AsString())
			} else if s.Key.Type() == cty.Number {
				b.WriteString("[" + s.Key.AsBigFloat().Text('f', -1) + "]")
			}
		case hcl.TraverseSplat:
			b.WriteString("[*]")
		}
	}
	return b.String()
}

func jsonLine(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// JUnit XML: one testsuite per test file, one testcase per run, in the
// form both common schemas accept, the Apache Ant one (windyroad's
// JUnit.xsd, the stricter: every testsuite has its properties, system-out
// and system-err, a package, an id, a hostname and a timestamp without a
// zone; every failure and error a type) and Jenkins's (the xunit plugin's
// junit-10.xsd). TestJUnitSchema checks both with xmllint when it is
// installed, and the structure without it.

type junitSuite struct {
	name, timestamp, hostname        string
	tests, failures, errors, skipped int
	time                             time.Duration
	id                               int
	cases                            []junitCase
	systemOut                        strings.Builder
}

type junitCase struct {
	name, classname string
	time            time.Duration
	outcome         string // "", "failure", "error" or "skipped"
	message, typ    string
	body            string
}

// WriteJUnit writes the report as JUnit XML. sources are the files
// diagnostics point into (Suite.Sources), for their snippets.
//
// The XML is written here rather than by encoding/xml: its form is fixed
// and small, and encoding/xml would add about 100 KB to the binary and a
// package init to every start of symbi. TestJUnitSchema parses what this
// writes and checks it against both schemas' rules.
func WriteJUnit(w io.Writer, rep *Report, sources map[string]*hcl.File) error {
	host, err := os.Hostname()
	if err != nil || strings.TrimSpace(host) == "" {
		host = "localhost"
	}
	var suites []*junitSuite
	byFile := map[*File]*junitSuite{}
	for _, rr := range rep.Results {
		f := rr.Run.File
		s, ok := byFile[f]
		if !ok {
			s = &junitSuite{name: f.Path, id: len(suites), hostname: host, timestamp: rr.Start.UTC().Format("2006-01-02T15:04:05")}
			byFile[f] = s
			suites = append(suites, s)
		}
		s.tests++
		s.time += rr.Elapsed
		c := junitCase{name: rr.Run.Name, classname: f.Path, time: rr.Elapsed}
		body := diagText(rr.Diagnostics(), sources)
		switch rr.Status {
		case Fail:
			s.failures++
			c.outcome, c.message, c.typ, c.body = "failure", firstSummary(rr), "assertion", body
		case Error:
			s.errors++
			c.outcome, c.message, c.typ, c.body = "error", firstSummary(rr), "error", body
		case Skip:
			s.skipped++
			c.outcome, c.message = "skipped", "interrupted before it ran"
		}
		s.cases = append(s.cases, c)
		for _, id := range rr.RunIDs() {
			fmt.Fprintf(&s.systemOut, "run %q: symbi runs show %s --state-dir %s\n", rr.Run.Name, id, rr.StateDir)
		}
	}
	var b strings.Builder
	b.WriteString("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n")
	for _, s := range suites {
		fmt.Fprintf(&b, "  <testsuite name=%s timestamp=%s hostname=%s tests=\"%d\" failures=\"%d\" errors=\"%d\" skipped=\"%d\" time=\"%s\" package=%s id=\"%d\">\n",
			xmlAttr(s.name), xmlAttr(s.timestamp), xmlAttr(s.hostname), s.tests, s.failures, s.errors, s.skipped, seconds(s.time), xmlAttr(s.name), s.id)
		b.WriteString("    <properties></properties>\n")
		for _, c := range s.cases {
			fmt.Fprintf(&b, "    <testcase name=%s classname=%s time=\"%s\"", xmlAttr(c.name), xmlAttr(c.classname), seconds(c.time))
			if c.outcome == "" {
				b.WriteString("></testcase>\n")
				continue
			}
			fmt.Fprintf(&b, ">\n      <%s message=%s", c.outcome, xmlAttr(c.message))
			if c.typ != "" {
				fmt.Fprintf(&b, " type=%s", xmlAttr(c.typ))
			}
			fmt.Fprintf(&b, ">%s</%s>\n    </testcase>\n", xmlCDATA(c.body), c.outcome)
		}
		fmt.Fprintf(&b, "    <system-out>%s</system-out>\n    <system-err></system-err>\n  </testsuite>\n", xmlCDATA(s.systemOut.String()))
	}
	b.WriteString("</testsuites>\n")
	_, err = io.WriteString(w, b.String())
	return err
}

// xmlAttr is s as a quoted attribute value: markup escaped, and every
// character XML 1.0 does not allow replaced by U+FFFD.
func xmlAttr(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range xmlText(s) {
		switch r {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '"':
			b.WriteString("&quot;")
		case '\n':
			b.WriteString("&#xA;")
		case '\r':
			b.WriteString("&#xD;")
		case '\t':
			b.WriteString("&#x9;")
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// xmlCDATA is s as CDATA sections, readable in the file as it was written;
// a "]]>" in s ends one section and starts the next.
func xmlCDATA(s string) string {
	if s == "" {
		return ""
	}
	return "<![CDATA[" + strings.ReplaceAll(xmlText(s), "]]>", "]]]]><![CDATA[>") + "]]>"
}

// xmlText is s with every character XML 1.0 does not allow (most control
// characters; a model's answer may hold any) replaced by U+FFFD: a CDATA
// section, unlike escaped text, cannot spell them otherwise.
func xmlText(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\t' || r == '\n' || r == '\r':
			return r
		case r < 0x20, r >= 0xD800 && r <= 0xDFFF, r == 0xFFFE, r == 0xFFFF, r == utf8.RuneError:
			return '\uFFFD'
		}
		return r
	}, s)
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }

func firstSummary(rr *RunResult) string {
	ds := rr.Diagnostics()
	if len(ds) == 0 {
		return rr.Status.String()
	}
	if ds[0].Summary == "Test assertion failed" && ds[0].Detail != "" {
		return ds[0].Detail
	}
	return ds[0].Summary
}

func diagText(ds hcl.Diagnostics, sources map[string]*hcl.File) string {
	var b strings.Builder
	_ = hcl.NewDiagnosticTextWriter(&b, sources, 0, false).WriteDiagnostics(ds)
	return b.String()
}
