package symbitest

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/symbi-dev/symbi/provider/cassette"
)

// reportSuite runs a test file with a run of each status: one that passes,
// one whose assertion fails with a message full of what XML cannot hold,
// one that cannot run (its cassette broke after it was checked) and one
// skipped.
func reportSuite(t *testing.T) (*Suite, *Report) {
	dir := extract(t, "agent.txtar")
	cas := filepath.Join(dir, "broken.json")
	if err := cassette.New().Save(cas); err != nil {
		t.Fatal(err)
	}
	path := write(t, dir, "report.symbitest.hcl", `config = "agent.hcl"

run "passes" {
  assert {
    condition     = run.answer == "6 × 7 is 42."
    error_message = "The answer names the product."
  }
}

run "fails" {
  assert {
    condition     = run.answer == "43" && run.iterations < 5
    error_message = "Wrong: \u001b[31m<b>&\"]]>${run.answer}\u0000"
  }
}

run "errs" {
  cassette = "broken.json"
}
`)
	s := load(t, []string{path}, LoadOptions{})
	os.WriteFile(cas, []byte("{not json"), 0o644)
	rep, _ := runAll(t, s, RunOptions{})
	rep.Results = append(rep.Results, &RunResult{Run: s.Files[0].Runs[0], Status: Skip, Repetitions: []*Repetition{skipped(s.Files[0].Runs[0])}})
	return s, rep
}

func TestJSONReport(t *testing.T) {
	s, rep := reportSuite(t)
	var b bytes.Buffer
	for _, rr := range rep.Results {
		if err := WriteJSONResult(&b, rr); err != nil {
			t.Fatal(err)
		}
	}
	WriteJSONSummary(&b, rep)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 5 {
		t.Fatalf("%d lines:\n%s", len(lines), b.String())
	}
	var fails JSONRun
	if err := json.Unmarshal([]byte(lines[1]), &fails); err != nil {
		t.Fatal(err)
	}
	if fails.Run != "fails" || fails.Status != "fail" || len(fails.RunIDs) != 1 || len(fails.Diagnostics) != 1 {
		t.Fatalf("the failed run's line: %s", lines[1])
	}
	d := fails.Diagnostics[0]
	if d.Detail != `Wrong: \u001b[31m<b>&"]]>6 × 7 is 42.\u0000` {
		t.Errorf("the message is not escaped as a terminal needs: %q", d.Detail)
	}
	if d.Summary != "Test assertion failed" || d.Range == nil || d.Range.Line != 12 || d.Range.Filename != s.Files[0].Path {
		t.Errorf("diagnostic %+v", d)
	}
	if string(d.Values["run.answer"]) != `"6 × 7 is 42."` || string(d.Values["run.iterations"]) != "2" {
		t.Errorf("the condition's values: %s", d.Values)
	}
	var sum JSONSummary
	json.Unmarshal([]byte(lines[4]), &sum)
	if sum != (JSONSummary{Type: "summary", Status: "error", Passed: 1, Failed: 1, Errors: 1, Skipped: 1, DurationMS: sum.DurationMS}) {
		t.Errorf("summary %+v", sum)
	}
}

// TestJUnitSchema writes the report as JUnit XML and checks it the two
// ways: the structure the common schemas require (always), and xmllint
// against testdata/junit.xsd, which states the same for both schemas'
// consumers (when xmllint is installed; SYMBI_XMLLINT names it and makes
// it required, as .ci/run does). A file that breaks the rules fails both,
// so neither check passes whatever it is given.
func TestJUnitSchema(t *testing.T) {
	s, rep := reportSuite(t)
	var b bytes.Buffer
	if err := WriteJUnit(&b, rep, s.Sources); err != nil {
		t.Fatal(err)
	}
	out := b.Bytes()
	if problems := checkJUnit(out); len(problems) > 0 {
		t.Errorf("the report breaks the JUnit schemas' rules:\n%s\n%s", strings.Join(problems, "\n"), out)
	}
	for _, want := range []string{`<failure message="Wrong: `, `type="assertion"`, `<error message="Invalid cassette" type="error">`,
		`<skipped message="interrupted before it ran">`, `tests="4" failures="1" errors="1" skipped="1"`, "with run.answer as"} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("the report lacks %q:\n%s", want, out)
		}
	}
	var parsed struct {
		Suites []struct {
			Cases []struct {
				Failure *struct {
					Message string `xml:"message,attr"`
					Body    string `xml:",chardata"`
				} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(out, &parsed); err != nil {
		t.Fatal(err)
	}
	if f := parsed.Suites[0].Cases[1].Failure; f == nil || !strings.Contains(f.Body, `Wrong: \u001b[31m<b>&"]]>6 × 7 is 42.`) || !strings.HasPrefix(f.Message, `Wrong: \u001b[31m<b>&"]]>`) {
		t.Errorf("the failure's text does not read back as written: %+v", f)
	}
	if bytes.Contains(out, []byte("\x1b")) || bytes.Contains(out, []byte("\x00")) {
		t.Errorf("the report holds characters XML does not allow:\n%q", out)
	}

	// The same report broken in three ways the schemas forbid.
	broken := bytes.Replace(out, []byte(` type="assertion"`), nil, 1)
	broken = bytes.Replace(broken, []byte(`<system-err>`), []byte(`<system-out></system-out><system-err>`), 1)
	broken = regexp.MustCompile(`timestamp="([^"]*)"`).ReplaceAll(broken, []byte(`timestamp="${1}Z"`))
	if problems := checkJUnit(broken); len(problems) < 3 {
		t.Errorf("the structural check missed what is broken: %v", problems)
	}

	xmllint := os.Getenv("SYMBI_XMLLINT")
	if xmllint == "" {
		var err error
		if xmllint, err = exec.LookPath("xmllint"); err != nil {
			t.Skip("xmllint is not installed (apt-get install libxml2-utils): the report was checked without it")
		}
	}
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "good.xml"), filepath.Join(dir, "bad.xml")
	os.WriteFile(good, out, 0o644)
	os.WriteFile(bad, broken, 0o644)
	if res, err := exec.Command(xmllint, "--noout", "--schema", "testdata/junit.xsd", good).CombinedOutput(); err != nil {
		t.Errorf("xmllint rejects the report: %v\n%s\n%s", err, res, out)
	}
	if res, err := exec.Command(xmllint, "--noout", "--schema", "testdata/junit.xsd", bad).CombinedOutput(); err == nil {
		t.Errorf("xmllint accepts a broken report:\n%s", res)
	}
}

// xnode is any XML element.
type xnode struct {
	XMLName xml.Name
	Attrs   []xml.Attr `xml:",any,attr"`
	Nodes   []xnode    `xml:",any"`
}

func (n xnode) attr(name string) (string, bool) {
	for _, a := range n.Attrs {
		if a.Name.Local == name {
			return a.Value, true
		}
	}
	return "", false
}

var (
	junitTime  = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?$`)
	junitStamp = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}$`)
)

// checkJUnit lists how a JUnit report breaks the rules both common
// schemas (Ant's JUnit.xsd and Jenkins's junit-10.xsd) agree on, as
// testdata/junit.xsd states them, and whether its counts add up.
func checkJUnit(b []byte) []string {
	var root xnode
	if err := xml.Unmarshal(b, &root); err != nil {
		return []string{err.Error()}
	}
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	attrs := func(n xnode, required, optional []string, checks map[string]*regexp.Regexp) {
		allowed := map[string]bool{}
		for _, a := range append(required, optional...) {
			allowed[a] = true
		}
		for _, a := range n.Attrs {
			if !allowed[a.Name.Local] {
				bad("%s has an attribute %s no schema allows", n.XMLName.Local, a.Name.Local)
			}
		}
		for _, a := range required {
			v, ok := n.attr(a)
			if !ok || strings.TrimSpace(v) == "" && a != "package" {
				bad("%s lacks %s", n.XMLName.Local, a)
			}
		}
		for a, re := range checks {
			if v, ok := n.attr(a); ok && !re.MatchString(v) {
				bad("%s's %s %q is not of its form", n.XMLName.Local, a, v)
			}
		}
	}
	count := func(n xnode, a string) int {
		v, _ := n.attr(a)
		i, err := strconv.Atoi(v)
		if err != nil || i < 0 {
			if v != "" || a != "skipped" {
				bad("%s's %s %q is not a count", n.XMLName.Local, a, v)
			}
		}
		return i
	}
	if root.XMLName.Local != "testsuites" {
		bad("the root is %s, not testsuites", root.XMLName.Local)
	}
	attrs(root, nil, nil, nil)
	for i, suite := range root.Nodes {
		if suite.XMLName.Local != "testsuite" {
			bad("testsuites holds a %s", suite.XMLName.Local)
			continue
		}
		attrs(suite, []string{"name", "timestamp", "hostname", "tests", "failures", "errors", "time", "package", "id"}, []string{"skipped"},
			map[string]*regexp.Regexp{"time": junitTime, "timestamp": junitStamp})
		if id := count(suite, "id"); id != i {
			bad("testsuite %d has id %d", i, id)
		}
		var names []string
		cases, failures, errs, skips := 0, 0, 0, 0
		for _, c := range suite.Nodes {
			names = append(names, c.XMLName.Local)
			if c.XMLName.Local != "testcase" {
				continue
			}
			cases++
			attrs(c, []string{"name", "classname", "time"}, nil, map[string]*regexp.Regexp{"time": junitTime})
			if len(c.Nodes) > 1 {
				bad("testcase %s holds %d elements, at most one of skipped, error and failure", mustAttr(c, "name"), len(c.Nodes))
			}
			for _, o := range c.Nodes {
				switch o.XMLName.Local {
				case "failure":
					failures++
					attrs(o, []string{"type"}, []string{"message"}, nil)
				case "error":
					errs++
					attrs(o, []string{"type"}, []string{"message"}, nil)
				case "skipped":
					skips++
					attrs(o, nil, []string{"message", "type"}, nil)
				default:
					bad("testcase holds a %s", o.XMLName.Local)
				}
			}
		}
		order := regexp.MustCompile(`^properties( testcase)*( system-out system-err)$`)
		if !order.MatchString(strings.Join(names, " ")) {
			bad("testsuite %d holds %v, not properties, testcases, system-out, system-err", i, names)
		}
		if count(suite, "tests") != cases || count(suite, "failures") != failures || count(suite, "errors") != errs || count(suite, "skipped") != skips {
			bad("testsuite %d's counts do not match its testcases (%d, %d failures, %d errors, %d skipped)", i, cases, failures, errs, skips)
		}
	}
	return problems
}

func mustAttr(n xnode, a string) string {
	v, _ := n.attr(a)
	return v
}
