package repl

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/symbi-dev/symbi/engine"
	"github.com/symbi-dev/symbi/journal/render"
)

// target is what :run and :step run: an agent, or (for :run) a best_of_n.
type target struct {
	addr    string
	bestOfN bool
}

func (s *Session) runTarget(name string, rng hcl.Range, allowBestOfN bool) (target, hcl.Diagnostics) {
	if strings.HasPrefix(name, "best_of_n.") {
		if !allowBestOfN {
			return target{}, errorAt(rng, "Cannot step best-of-N", ":step walks through one agent's loop; run %s with :run, or step its agent.", name)
		}
		if s.cfg.Plan.BestOfNByAddress(name) == nil {
			return target{}, errorAt(rng, "No such best_of_n", "The configuration has no %s.", name)
		}
		return target{addr: name, bestOfN: true}, nil
	}
	ag, diags := s.agentAt(name, rng)
	if diags.HasErrors() {
		return target{}, diags
	}
	return target{addr: ag.Address}, nil
}

// runInput is the input of :run and :step: the rest of the line as
// written, a quoted HCL string (which may interpolate, "${var.topic}"), or
// var.input when left out.
func (s *Session) runInput(c call, rest string, restOff int, rng hcl.Range) (string, hcl.Diagnostics) {
	if rest == "" {
		if v, ok := s.scope().Variables["var"]; ok && v.Type().IsObjectType() && v.Type().HasAttribute("input") {
			in := v.GetAttr("input")
			if in.IsKnown() && !in.IsNull() && in.Type() == cty.String {
				return in.AsString(), nil
			}
		}
		return "", errorAt(rng, "Missing input", "Give the input after the agent, or declare variable \"input\" for the default.")
	}
	if strings.HasPrefix(rest, `"`) || strings.HasPrefix(rest, "<<") {
		v, diags := s.evalAt(c.line, restOff, len(c.line))
		if diags.HasErrors() {
			return "", diags
		}
		if v.Type() != cty.String || v.IsNull() || !v.IsKnown() {
			return "", errorAt(rangeAt(c.line, restOff, len(c.line)), "Input is not a string", "A quoted input must be a string, got %s.", friendlyType(v))
		}
		return v.AsString(), nil
	}
	return rest, nil
}

func (s *Session) newEngine(onEvent func(engine.Event)) (*engine.Engine, error) {
	opts := engine.Options{
		BaseDir:   s.cfg.BaseDir,
		StateDir:  s.stateDir(),
		Protected: s.opts.VarFiles,
		LookupEnv: s.opts.LookupEnv,
		Approver:  s.opts.Approver,
		OnEvent:   onEvent,
		Now:       s.opts.Now,
		Rand:      s.opts.Rand,
	}
	if s.opts.Engine != nil {
		s.opts.Engine(&opts)
	}
	return engine.New(s.cfg.Plan, opts)
}

// runAgent runs an agent (or a best_of_n) to its end and prints the answer
// and a summary. The run is journalled like any other: :journal shows it.
func (s *Session) runAgent(ctx context.Context, c call) (string, hcl.Diagnostics) {
	if s.step != nil {
		return "", errorAt(c.nameRng, "A run is being stepped", "Finish it first: Enter for the next phase, :continue to run it to its end, :abort to cancel it.")
	}
	name, rng, rest, restOff := c.word()
	if name == "" {
		return "", errorAt(c.nameRng, "Missing agent", ":run needs an agent and its input: :run agent.NAME What is 6 * 7?")
	}
	t, diags := s.runTarget(name, rng, true)
	if diags.HasErrors() {
		return "", diags
	}
	input, diags := s.runInput(c, rest, restOff, rng)
	if diags.HasErrors() {
		return "", diags
	}
	eng, err := s.newEngine(nil)
	if err != nil {
		return "", errorAt(rng, "Run did not start", "%v", err)
	}
	defer eng.Close()
	var res *engine.Result
	if t.bestOfN {
		res, err = eng.RunBestOfN(ctx, t.addr, input, engine.RunOptions{})
	} else {
		res, err = eng.Run(ctx, t.addr, input, engine.RunOptions{})
	}
	if err != nil {
		return "", errorAt(rng, "Run did not start", "%v", err)
	}
	return resultText(res), nil
}

// resultText is a finished run: its answer, then one line of summary.
func resultText(res *engine.Result) string {
	var b strings.Builder
	if res.Termination.Reason == engine.Completed {
		b.WriteString(res.Answer)
		if !strings.HasSuffix(res.Answer, "\n") {
			b.WriteString("\n")
		}
	}
	fmt.Fprintf(&b, "-- run %s %s: %s, %s\n", res.RunID, terminationText(res.Termination), render.Usage(res.Iterations, res.Usage), elapsedText(res.Elapsed))
	return b.String()
}

// elapsedText prints a run's duration.
func elapsedText(d time.Duration) string { return render.Duration(d).String() }

// terminationText is how a run ended, its limit and, when it says more
// than the reason, its detail.
func terminationText(t engine.Termination) string {
	s := string(t.Reason)
	if t.Limit != "" {
		s += " (" + t.Limit + ")"
	}
	if t.Detail != "" && t.Detail != string(t.Reason) {
		s += ": " + t.Detail
	}
	return s
}
