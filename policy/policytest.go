package policy

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/symbi-dev/symbi/plan"
)

// TestResult is the outcome of one policy_test block or one Rego test_ rule.
// A result is exactly one of passed, failed (the decision or the test rule
// was not what was expected), errored (the test could not run to a verdict)
// or skipped, as `opa test` counts them.
type TestResult struct {
	Name     string // "policy_test.no_sudo", or "policy.rego data.symbi.gate.test_x"
	Kind     string // policy_test | rego
	Location string // file:line
	Passed   bool
	Errored  bool   // the policy did not load, the test's action or reason is invalid, or the Rego test rule raised an error
	Skipped  bool   // a Rego todo_test_ rule
	Message  string // what was decided, or why it failed or errored
	Elapsed  time.Duration
}

// TestCounts is the summary of a test run, counted as `opa test` counts:
// every result is exactly one of passed, failed, errored or skipped.
type TestCounts struct {
	Passed, Failed, Errors, Skipped int
}

// CountTests sums up results.
func CountTests(results []TestResult) TestCounts {
	var c TestCounts
	for _, r := range results {
		switch {
		case r.Skipped:
			c.Skipped++
		case r.Errored:
			c.Errors++
		case r.Passed:
			c.Passed++
		default:
			c.Failed++
		}
	}
	return c
}

// OK reports whether nothing failed or errored (skipped tests do not count
// against a run, as with `opa test`).
func (c TestCounts) OK() bool { return c.Failed == 0 && c.Errors == 0 }

// String is the summary line: "3 passed, 1 failed, 1 error, 2 skipped".
func (c TestCounts) String() string {
	errs := "errors"
	if c.Errors == 1 {
		errs = "error"
	}
	return fmt.Sprintf("%d passed, %d failed, %d %s, %d skipped", c.Passed, c.Failed, c.Errors, errs, c.Skipped)
}

// RunTests runs every policy_test block of the plan, then the Rego test_
// rules of every OPA policy's modules (with the policy's data). A policy
// that does not load fails the tests that need it, with the load error.
func RunTests(ctx context.Context, p *plan.Plan, baseDir string) []TestResult {
	loader := NewLoader(p, baseDir) // prepares each policy once
	var results []TestResult
	for _, pt := range p.PolicyTests {
		g, err := loader.Gate(ctx, pt.Policy)
		if err != nil {
			results = append(results, TestResult{Name: pt.Address, Kind: "policy_test", Location: pt.Range.String(), Errored: true, Message: err.Error()})
			continue
		}
		results = append(results, runPolicyTest(ctx, p, pt, g))
	}
	seen := map[string]bool{}
	for _, pol := range p.Policies {
		if pol.Kind != "opa" || pol.OPA == nil {
			continue
		}
		g, err := loader.Gate(ctx, pol.Address)
		if err != nil {
			results = append(results, TestResult{Name: pol.Address, Kind: "rego", Location: pol.Range.String(), Errored: true, Message: err.Error()})
			continue
		}
		o, ok := g.(OPAGate)
		if !ok {
			continue
		}
		key := modulePaths(pol.OPA.Modules) + fmt.Sprint(pol.OPA.Data)
		if seen[key] {
			continue
		}
		seen[key] = true
		results = append(results, o.RegoTests(ctx)...)
	}
	return results
}

func runPolicyTest(ctx context.Context, p *plan.Plan, pt plan.PolicyTest, g Gate) TestResult {
	r := TestResult{Name: pt.Address, Kind: "policy_test", Location: pt.Range.String()}
	action, err := ParseAction(pt.Action)
	if err != nil {
		r.Errored, r.Message = true, err.Error()
		return r
	}
	agent := pt.Agent
	if agent == "" {
		agent = agentUsing(p, pt.Policy)
	}
	in := NewInput(p, agent, action, nil)
	start := time.Now()
	d := g.Decide(ctx, in)
	r.Elapsed = time.Since(start)
	got := string(d.Outcome)
	if d.Reason != "" {
		got += fmt.Sprintf(" (%s)", d.Reason)
	}
	switch {
	case string(d.Outcome) != pt.Expect:
		r.Message = fmt.Sprintf("got %s, want %s", got, pt.Expect)
	case pt.Reason != "":
		re, err := regexp.Compile(pt.Reason)
		if err != nil {
			r.Errored, r.Message = true, fmt.Sprintf("reason %q is not a regular expression: %v", pt.Reason, err)
		} else if !re.MatchString(d.Reason) {
			r.Message = fmt.Sprintf("got %s, want a reason matching %q", got, pt.Reason)
		} else {
			r.Passed, r.Message = true, got
		}
	default:
		r.Passed, r.Message = true, got
	}
	return r
}

// agentUsing names an agent that lists the policy, so a test without an
// agent sees a realistic principal; "test" when none does.
func agentUsing(p *plan.Plan, policy string) string {
	for _, a := range p.Agents {
		if slices.Contains(a.Policies, policy) {
			return a.Address
		}
	}
	return "agent.test"
}

// Explain decides in with g and describes why: the Rego trace of an OPA
// policy, the request and determining policies of a Cedar one, the matching
// pattern of built-in rules.
func Explain(ctx context.Context, g Gate, in Input) (Decision, string) {
	var buf bytes.Buffer
	var d Decision
	switch g := g.(type) {
	case OPAGate:
		var text string
		d, text = g.Explain(ctx, in)
		buf.WriteString(text)
	case *Cedar:
		d = g.explain(in, &buf)
	case *Rules:
		d = g.Decide(ctx, in)
		g.explain(&buf)
	default:
		d = g.Decide(ctx, in)
	}
	return d, buf.String()
}

func (r *Rules) explain(w io.Writer) {
	for _, group := range []struct {
		name string
		list []rulePattern
	}{{"deny", r.deny}, {"ask", r.ask}, {"allow", r.allow}} {
		texts := make([]string, len(group.list))
		for i, p := range group.list {
			texts[i] = fmt.Sprintf("%q", p.text)
		}
		fmt.Fprintf(w, "%-5s = [%s]\n", group.name, strings.Join(texts, ", "))
	}
	fmt.Fprintln(w, "deny wins, then ask, then allow; no match is not_applicable")
}

// modulePaths are the modules' paths, sorted: which modules a policy runs,
// whatever their order in the plan.
func modulePaths(refs []plan.FileRef) string {
	paths := make([]string, 0, len(refs))
	for _, r := range refs {
		paths = append(paths, r.Path)
	}
	slices.Sort(paths)
	paths = slices.Compact(paths)
	return fmt.Sprint(paths)
}

// AgentFor names the agent a policy is evaluated for when none is given:
// the first agent that lists it, or agent.test.
func AgentFor(p *plan.Plan, policyAddr string) string { return agentUsing(p, policyAddr) }
