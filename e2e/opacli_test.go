package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// The OPA CLI commands docs/policy.md gives for the shipped policy pack and
// input schema, run from the repository's root. The tests below run exactly
// these, and fail when the docs stop saying them.
const (
	opaTestCmd  = "opa test examples/policies/policies/"
	opaCheckCmd = "opa check -s docs/schemas/opa-input.schema.json examples/policies/policies/"
	opaEvalCmd  = "opa eval -d examples/policies/policies/ -i input.json data.symbi.gate.decision"
	// symbi's half of opa eval: the input document of one decision.
	symbiInputCmd = "symbi policy eval policy.gate --explain --action"
)

// opaCLI is the OPA CLI to compare with: $SYMBI_OPA, else opa on the PATH.
// It must be the version go.mod names, the OPA symbi embeds, or the
// comparison would be with another engine. Without one the tests skip;
// .ci/run installs it (scripts/opa.sh), so CI never skips them.
func opaCLI(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("SYMBI_OPA")
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("opa"); err != nil {
			t.Skip("the OPA CLI is not installed, so the shipped policy pack is not checked with it: " +
				"SYMBI_OPA=$(scripts/opa.sh) go test ./e2e -run OPA installs the version go.mod names and runs these tests (.ci/run does)")
		}
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatalf("%s version: %v (SYMBI_OPA=%q)", bin, err, os.Getenv("SYMBI_OPA"))
	}
	m := regexp.MustCompile(`(?m)^Version: (\S+)$`).FindSubmatch(out)
	gomod, err := os.ReadFile(filepath.Join("..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	want := regexp.MustCompile(`(?m)^\s*github\.com/open-policy-agent/opa v(\S+)`).FindSubmatch(gomod)
	if m == nil || want == nil || string(m[1]) != string(want[1]) {
		t.Fatalf("%s is OPA %q; go.mod embeds %q: run these tests with SYMBI_OPA=$(scripts/opa.sh)", bin, m, want)
	}
	return bin
}

// opaWorkspace copies what the commands read (the policy pack and the input
// schema) into a fresh directory laid out like the repository, so the
// commands run as the docs write them and leave nothing in the checkout.
func opaWorkspace(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	copyTree(t, filepath.Join("..", "examples", "policies"), filepath.Join(root, "examples", "policies"))
	copyTree(t, filepath.Join("..", "docs", "schemas"), filepath.Join(root, "docs", "schemas"))
	return root
}

// runOPA runs one of the commands above (its first word replaced by the
// binary) in dir, with extra arguments after the command's own.
func runOPA(t *testing.T, bin, dir, command string, extra ...string) (stdout string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangLimit)
	defer cancel()
	args := append(strings.Fields(command)[1:], extra...)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("%s: still running after %v, killed", command, hangLimit)
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("%s: %v", command, err)
	}
	return out.String() + errOut.String(), code
}

func TestOPADocsGiveTheCommandsTested(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "policy.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{opaTestCmd, opaCheckCmd, opaEvalCmd, symbiInputCmd} {
		if !bytes.Contains(doc, []byte(c)) {
			t.Errorf("docs/policy.md does not give the command the OPA CLI tests run: %s", c)
		}
	}
}

// TestOPACLIRunsThePacksTests runs the pack's Rego tests with opa test and
// with symbi policy test: both load the files, and every test has the same
// result in both.
func TestOPACLIRunsThePacksTests(t *testing.T) {
	t.Parallel()
	bin := opaCLI(t)
	root := opaWorkspace(t)
	if out, code := runOPA(t, bin, root, opaTestCmd); code != 0 || !strings.Contains(out, "PASS: ") {
		t.Fatalf("%s: exit %d\n%s", opaTestCmd, code, out)
	}
	out, code := runOPA(t, bin, root, opaTestCmd, "--format", "json")
	if code != 0 {
		t.Fatalf("%s --format json: exit %d\n%s", opaTestCmd, code, out)
	}
	var results []struct {
		Package, Name string
		Fail, Skip    bool
		Error         json.RawMessage
	}
	if err := json.Unmarshal([]byte(out), &results); err != nil {
		t.Fatalf("opa test --format json: %v\n%s", err, out)
	}
	opa := map[string]string{}
	for _, r := range results {
		status := "PASS"
		switch {
		case r.Skip:
			status = "SKIP"
		case len(r.Error) > 0 && string(r.Error) != "null":
			status = "ERROR"
		case r.Fail:
			status = "FAIL"
		}
		opa[r.Package+"."+r.Name] = status
	}

	r := symbi(t, call{dir: root}, "policy", "test", "examples/policies")
	if r.code != 0 {
		t.Fatalf("symbi policy test:\n%s", r)
	}
	ours := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^(PASS|FAIL|ERROR|SKIP) policy\.gate (data\.\S+) `).FindAllStringSubmatch(r.stdout, -1) {
		ours[m[2]] = m[1]
	}
	if len(opa) < 10 || !reflect.DeepEqual(opa, ours) {
		t.Errorf("opa test and symbi policy test disagree:\nopa   %v\nsymbi %v", opa, ours)
	}
}

// TestOPACLIChecksThePackAgainstTheSchema type-checks the pack's modules
// against the published input schema, as a security team would: they
// check, and a module that reads a member the schema does not have does
// not, so the schema is really what is checked against.
func TestOPACLIChecksThePackAgainstTheSchema(t *testing.T) {
	t.Parallel()
	bin := opaCLI(t)
	root := opaWorkspace(t)
	if out, code := runOPA(t, bin, root, opaCheckCmd); code != 0 {
		t.Fatalf("%s: exit %d\n%s", opaCheckCmd, code, out)
	}
	writeFile(t, root, "examples/policies/policies/typo.rego", "package symbi.typo\n\nshell if input.action.toool == \"shell\"\n")
	out, code := runOPA(t, bin, root, opaCheckCmd)
	if code == 0 || !strings.Contains(out, "undefined ref: input.action.toool") {
		t.Fatalf("%s with a module reading input.action.toool: exit %d, want a type error\n%s", opaCheckCmd, code, out)
	}
}

// TestOPACLIDecidesAsSymbi decides a set of actions with symbi policy eval
// and with opa eval over the input document symbi shows: the decisions,
// reasons and modified arguments must be the same.
func TestOPACLIDecidesAsSymbi(t *testing.T) {
	t.Parallel()
	bin := opaCLI(t)
	root := opaWorkspace(t)
	for _, tc := range []struct {
		name, agent, action, want string
	}{
		{"allow-listed", "", `{"tool":"shell","arguments":{"cmd":"ls -la"}}`, "allow"},
		{"git read", "", `{"tool":"shell","arguments":{"cmd":"git log -3"}}`, "allow"},
		{"git write", "", `{"tool":"shell","arguments":{"cmd":"git push --force"}}`, "deny"},
		{"git alone", "", `{"tool":"shell","arguments":{"cmd":"git"}}`, "deny"},
		{"not allow-listed", "", `{"tool":"shell","arguments":{"cmd":"curl http://example.com"}}`, "deny"},
		{"metacharacter", "", `{"tool":"shell","arguments":{"cmd":"ls; rm -rf ~"}}`, "deny"},
		{"blank command", "", `{"tool":"shell","arguments":{"cmd":"   "}}`, "deny"},
		{"no command", "", `{"tool":"shell","arguments":{}}`, "not_applicable"},
		{"search capped", "", `{"tool":"web_search","arguments":{"query":"otters","max_results":100}}`, "modify"},
		{"search within cap", "", `{"tool":"web_search","arguments":{"query":"otters","max_results":5}}`, "not_applicable"},
		{"search", "researcher", `{"tool":"web_search","arguments":{"query":"otters"}}`, "not_applicable"},
		{"destructive", "janitor", `{"tool":"delete_file","arguments":{"path":"/tmp/old.log"}}`, "ask"},
		{"read", "writer", `{"tool":"read_file","arguments":{"path":"README.md"}}`, "not_applicable"},
		{"write", "writer", `{"tool":"write_file","arguments":{"path":"notes/a.md","content":"x"}}`, "not_applicable"},
		{"delegate", "researcher", `{"type":"delegate","target":"critic","task":"check"}`, "not_applicable"},
		{"respond", "", `{"type":"respond","content":"42"}`, "not_applicable"},
		{"terminate", "", `{"type":"terminate","reason":"done"}`, "not_applicable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append(strings.Fields(symbiInputCmd)[1:], tc.action)
			if tc.agent != "" {
				args = append(args, "--agent", tc.agent)
			}
			r := symbi(t, call{dir: root}, append(args, "examples/policies")...)
			ours := symbiDecision(t, r)
			if ours.Decision != tc.want {
				t.Fatalf("symbi decided %q, want %q\n%s", ours.Decision, tc.want, r)
			}
			if wantCode := map[bool]int{true: 0, false: 3}[tc.want == "allow" || tc.want == "modify"]; r.code != wantCode {
				t.Errorf("symbi policy eval exit %d, want %d", r.code, wantCode)
			}

			dir := t.TempDir()
			copyTree(t, root, dir)
			writeFile(t, dir, "input.json", ours.input)
			out, code := runOPA(t, bin, dir, opaEvalCmd)
			if code != 0 {
				t.Fatalf("%s: exit %d\n%s", opaEvalCmd, code, out)
			}
			var res struct {
				Result []struct {
					Expressions []struct{ Value opaDecision }
				}
			}
			if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.Result) != 1 || len(res.Result[0].Expressions) != 1 {
				t.Fatalf("opa eval printed %s (%v)", out, err)
			}
			theirs := res.Result[0].Expressions[0].Value
			if theirs.Decision != ours.Decision || theirs.Reason != ours.Reason || !sameJSON(theirs.Arguments, ours.Arguments) {
				t.Errorf("decisions differ on %s\nopa   %s %q %s\nsymbi %s %q %s\ninput %s",
					tc.action, theirs.Decision, theirs.Reason, theirs.Arguments, ours.Decision, ours.Reason, ours.Arguments, ours.input)
			}
		})
	}
}

type opaDecision struct {
	Decision  string          `json:"decision"`
	Reason    string          `json:"reason"`
	Arguments json.RawMessage `json:"arguments"`
	input     string
}

// symbiDecision reads symbi policy eval --explain's report: its decision,
// reason, modified arguments and the input document OPA evaluated.
func symbiDecision(t *testing.T, r result) opaDecision {
	t.Helper()
	var d opaDecision
	for _, line := range strings.Split(r.stdout, "\n") {
		key, value, _ := strings.Cut(line, ":")
		value = strings.TrimSpace(value)
		switch key {
		case "decision":
			d.Decision = value
		case "reason":
			d.Reason = value
		case "arguments":
			d.Arguments = json.RawMessage(value)
		case "input":
			d.input = value
		}
	}
	if d.Decision == "" || d.input == "" {
		t.Fatalf("no decision or input in symbi's report:\n%s", r)
	}
	return d
}

// sameJSON compares two JSON texts by value; both empty is the same.
func sameJSON(a, b json.RawMessage) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}
