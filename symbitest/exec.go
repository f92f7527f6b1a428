package symbitest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/symbi-dev/symbi/engine"
	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/provider"
	"github.com/symbi-dev/symbi/provider/cassette"
	"github.com/symbi-dev/symbi/provider/scripted"
)

// Status is how a run, a file or a suite ended. The order matters: a
// file's status is the highest of its runs' (Merge), as Terraform's
// moduletest.Status.
type Status int

const (
	Pending Status = iota
	Skip
	Pass
	Fail
	Error
)

func (s Status) String() string {
	return [...]string{"pending", "skip", "pass", "fail", "error"}[s]
}

// Merge is the status of two together: the higher.
func (s Status) Merge(o Status) Status { return max(s, o) }

// RunOptions configure Suite.Run.
type RunOptions struct {
	// Parallel is how many runs (repetitions) run at once; GOMAXPROCS
	// when 0.
	Parallel int
	// Update records again, from the live model, every exchange of a
	// cassette that no longer matches, and records a missing cassette.
	Update bool
	// RecordChunks keeps the streamed pieces of what Update records.
	RecordChunks bool
	// StateDir is where the runs are journalled; each configuration's
	// state_dir when empty.
	StateDir string
	// LookupEnv resolves env() and API keys; os.LookupEnv when nil.
	LookupEnv func(string) (string, bool)
	// OnResult is given each run's result once it and every run before it
	// have finished, in the suite's order.
	OnResult func(*RunResult)
}

// RunResult is a run block's outcome over its repetitions.
type RunResult struct {
	Run         *Run
	Status      Status
	Passed      int // repetitions that passed
	Repetitions []*Repetition
	StateDir    string
	// Updated: the run's cassette was written (recorded or re-recorded).
	Updated bool
	Start   time.Time
	Elapsed time.Duration
}

// Repetition is one execution of a run block.
type Repetition struct {
	RunID       string
	Status      Status
	Diagnostics hcl.Diagnostics
	Elapsed     time.Duration
}

// Diagnostics are what the result has to say: each failing repetition's
// diagnostics (the first one's when they say the same), and for a
// repeated run how many passed.
func (rr *RunResult) Diagnostics() hcl.Diagnostics {
	var out hcl.Diagnostics
	for _, rep := range rr.Repetitions {
		if rep == nil || rep.Status == Pass {
			continue
		}
		for _, d := range rep.Diagnostics {
			if !containsDiag(out, d) {
				out = append(out, d)
			}
		}
	}
	return out
}

func containsDiag(ds hcl.Diagnostics, d *hcl.Diagnostic) bool {
	for _, e := range ds {
		if sameDiag(e, d) {
			return true
		}
	}
	return false
}

// RunIDs are the journalled runs of every repetition, in order.
func (rr *RunResult) RunIDs() []string {
	var out []string
	for _, rep := range rr.Repetitions {
		if rep != nil && rep.RunID != "" {
			out = append(out, rep.RunID)
		}
	}
	return out
}

// Report is a suite's outcome.
type Report struct {
	Results []*RunResult
	Start   time.Time
	Elapsed time.Duration
}

// Count is how many results have status s.
func (r *Report) Count(s Status) int {
	n := 0
	for _, rr := range r.Results {
		if rr.Status == s {
			n++
		}
	}
	return n
}

// Status is the suite's: the highest of its runs'.
func (r *Report) Status() Status {
	s := Pending
	for _, rr := range r.Results {
		s = s.Merge(rr.Status)
	}
	return s
}

// Select returns the runs a filter chooses: a run whose name, whose file's
// path or whose file's base name matches one of the patterns (path.Match
// globs: "denies_*"), every run when there is no pattern. It is an error
// for a pattern to be malformed.
func (s *Suite) Select(patterns []string) ([]*Run, error) {
	var out []*Run
	for _, f := range s.Files {
		for _, r := range f.Runs {
			ok := len(patterns) == 0
			for _, p := range patterns {
				for _, name := range []string{r.Name, f.Path, filepath.ToSlash(f.Path), filepath.Base(f.Path)} {
					m, err := path.Match(p, name)
					if err != nil {
						return nil, fmt.Errorf("-filter %q: %v", p, err)
					}
					ok = ok || m
				}
			}
			if ok {
				out = append(out, r)
			}
		}
	}
	return out, nil
}

// Run runs runs (from Select), each as many times as it repeats, at most
// opts.Parallel at once, and reports them in order. A cancelled ctx stops
// the runs in progress (they end cancelled) and skips the rest.
func (s *Suite) Run(ctx context.Context, runs []*Run, opts RunOptions) *Report {
	if opts.Parallel <= 0 {
		opts.Parallel = runtime.GOMAXPROCS(0)
	}
	if opts.LookupEnv == nil {
		opts.LookupEnv = os.LookupEnv
	}
	rep := &Report{Start: time.Now()}
	sem := make(chan struct{}, opts.Parallel)
	var locks sync.Map // cassette path -> *sync.Mutex, for Update
	done := make([]chan struct{}, len(runs))
	for i, r := range runs {
		rr := &RunResult{Run: r, Repetitions: make([]*Repetition, r.Repeat), Start: time.Now(), StateDir: stateDirOf(r, opts)}
		rep.Results = append(rep.Results, rr)
		done[i] = make(chan struct{})
		var wg sync.WaitGroup
		for k := range r.Repeat {
			wg.Add(1)
			go func() {
				defer wg.Done()
				select {
				case sem <- struct{}{}:
				case <-ctx.Done():
					rr.Repetitions[k] = skipped(r)
					return
				}
				defer func() { <-sem }()
				if ctx.Err() != nil {
					rr.Repetitions[k] = skipped(r)
					return
				}
				rr.Repetitions[k] = execute(ctx, r, opts, &locks, rr)
			}()
		}
		go func() {
			wg.Wait()
			rr.finish()
			close(done[i])
		}()
	}
	for i := range runs {
		<-done[i]
		if opts.OnResult != nil {
			opts.OnResult(rep.Results[i])
		}
	}
	rep.Elapsed = time.Since(rep.Start)
	return rep
}

// stateDirOf is where a run is journalled.
func stateDirOf(r *Run, opts RunOptions) string {
	if opts.StateDir != "" {
		return opts.StateDir
	}
	return engine.DefaultStateDir(r.Config.Plan, r.Config.BaseDir)
}

func skipped(r *Run) *Repetition {
	return &Repetition{Status: Skip, Diagnostics: hcl.Diagnostics{{
		Severity: hcl.DiagWarning, Summary: "Run skipped", Detail: "The tests were interrupted before this run started.", Subject: r.DefRange.Ptr(),
	}}}
}

// finish sets the run's status from its repetitions: it passes when the
// share that passed reaches pass_rate. A repetition that could not run
// (error) makes the run an error, and one skipped a skip.
func (rr *RunResult) finish() {
	rr.Elapsed = time.Since(rr.Start)
	worst := Pending
	for _, rep := range rr.Repetitions {
		if rep.Status == Pass {
			rr.Passed++
		}
		worst = worst.Merge(rep.Status)
	}
	r := rr.Run
	switch {
	case worst == Error:
		rr.Status = Error
	case worst == Skip && rr.Passed < len(rr.Repetitions):
		rr.Status = Skip
	case float64(rr.Passed) >= r.PassRate*float64(r.Repeat)-1e-9:
		rr.Status = Pass
	default:
		rr.Status = Fail
	}
	if r.Repeat > 1 && rr.Status == Fail {
		// Say how many passed, beside what failed.
		for _, rep := range rr.Repetitions {
			if rep.Status == Fail {
				rep.Diagnostics = append(rep.Diagnostics, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Pass rate not reached",
					Detail: fmt.Sprintf("%d of %d repetitions passed (%s); the run needs %s.", rr.Passed, r.Repeat,
						percent(float64(rr.Passed)/float64(r.Repeat)), percent(r.PassRate)),
					Subject: r.DefRange.Ptr(),
				})
				break
			}
		}
	}
}

func percent(f float64) string { return fmt.Sprintf("%.0f%%", f*100) }

// execute runs a run block once and judges it.
func execute(ctx context.Context, r *Run, opts RunOptions, locks *sync.Map, rr *RunResult) *Repetition {
	start := time.Now()
	rep := &Repetition{Status: Pass}
	defer func() { rep.Elapsed = time.Since(start) }()
	fail := func(status Status, summary, detail string, subject *hcl.Range) *hcl.Diagnostic {
		rep.Status = rep.Status.Merge(status)
		d := &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: printable(detail), Subject: subject}
		rep.Diagnostics = append(rep.Diagnostics, d)
		return d
	}

	p, err := runPlan(r)
	if err != nil {
		fail(Error, "Cannot prepare the run", err.Error(), r.DefRange.Ptr())
		return rep
	}
	var models map[string]provider.Model
	if r.Script != "" {
		m, err := scripted.Load(r.Script)
		if err != nil {
			fail(Error, "Invalid script", err.Error(), r.DefRange.Ptr())
			return rep
		}
		models = map[string]provider.Model{}
		for _, pm := range p.Models {
			models[pm.Address] = m
		}
	}
	var sess *cassette.Session
	if r.Cassette != "" {
		if opts.Update {
			mu, _ := locks.LoadOrStore(r.Cassette, &sync.Mutex{})
			mu.(*sync.Mutex).Lock()
			defer mu.(*sync.Mutex).Unlock()
		}
		c, err := cassette.Load(r.Cassette)
		mode := cassette.Replay
		switch {
		case opts.Update && errors.Is(err, fs.ErrNotExist):
			c, mode = nil, cassette.Record
		case err != nil:
			fail(Error, "Invalid cassette", err.Error(), r.CassetteRange.Ptr())
			return rep
		case opts.Update:
			mode = cassette.Update
		}
		sess = cassette.NewSession(c, cassette.Options{Mode: mode, Name: r.Cassette, Chunks: opts.RecordChunks})
	}

	// A knowledge store is one file that one run at a time may open: runs
	// that share one take turns.
	for _, path := range storePaths(p, r.Config.BaseDir) {
		mu, _ := locks.LoadOrStore("store:"+path, &sync.Mutex{})
		mu.(*sync.Mutex).Lock()
		defer mu.(*sync.Mutex).Unlock()
	}
	var tape engine.Cassette // nil unless there is a session: never a typed nil
	if sess != nil {
		tape = sess
	}
	stateDir := rr.StateDir
	var events []engine.Event
	e, err := engine.New(p, engine.Options{
		BaseDir:   r.Config.BaseDir,
		StateDir:  stateDir,
		Protected: protected(r),
		LookupEnv: opts.LookupEnv,
		OnEvent: func(ev engine.Event) {
			if !engine.ShownOnly(ev.Type) { // run.journal is what the journal keeps
				events = append(events, ev)
			}
		},
		Models:   models,
		Cassette: tape,
	})
	if err != nil {
		fail(Error, "Cannot start the run", err.Error(), r.DefRange.Ptr())
		return rep
	}
	var res *engine.Result
	if r.BestOfN != "" {
		res, err = e.RunBestOfN(ctx, r.BestOfN, r.Input, engine.RunOptions{})
	} else {
		res, err = e.Run(ctx, r.Agent, r.Input, engine.RunOptions{})
	}
	if cerr := e.Close(); cerr != nil {
		fail(Error, "Journal not written", cerr.Error(), r.DefRange.Ptr())
	}
	if err != nil {
		fail(Error, "Cannot start the run", err.Error(), r.DefRange.Ptr())
		return rep
	}
	rep.RunID = res.RunID
	if res.Termination.Reason == engine.Cancelled {
		fail(Error, "Run cancelled", "The tests were interrupted while this run ran; its cassette, if any, is left as it was.", r.DefRange.Ptr())
		return rep
	}
	if sess != nil {
		if opts.Update {
			if sess.Changed() {
				if err := sess.Cassette().Save(r.Cassette); err != nil {
					fail(Error, "Cannot write the cassette", err.Error(), r.CassetteRange.Ptr())
				} else {
					rr.Updated = true
				}
			}
		} else if ms := sess.Mismatches(); len(ms) > 0 {
			for _, m := range ms {
				fail(Fail, "Request differs from the cassette", m.Error()+"\n\nIf the change is meant, record the cassette again with symbi test -update.", r.CassetteRange.Ptr())
			}
			return rep
		}
	}
	judge(r, res, events, fail)
	return rep
}

// judge checks the run's outcome against expect_failures, then each
// assertion.
func judge(r *Run, res *engine.Result, events []engine.Event, fail func(Status, string, string, *hcl.Range) *hcl.Diagnostic) {
	status := string(res.Termination.Reason)
	switch {
	case len(r.ExpectFailures) == 0 && res.Termination.Reason != engine.Completed:
		fail(Fail, "Run did not complete", fmt.Sprintf("The run ended with %s. A run that is meant to be denied or stopped lists how in expect_failures.", res.Termination), r.DefRange.Ptr())
		return
	case len(r.ExpectFailures) > 0 && !contains(r.ExpectFailures, status):
		what := status
		if res.Termination.Reason != engine.Completed {
			what = res.Termination.String()
		}
		fail(Fail, "Expected failure did not happen", fmt.Sprintf("The run was expected to end with %s, but it ended with %s.", strings.Join(r.ExpectFailures, " or "), what), r.ExpectFailuresRange.Ptr())
		return
	}
	run := runValue(res, events)
	for _, a := range r.Asserts {
		ctx := assertContext(run, r.File.Dir)
		v, diags := a.Condition.Value(ctx)
		if diags.HasErrors() {
			for _, d := range diags {
				fail(Fail, "Error in assertion", d.Summary+": "+d.Detail, a.Condition.Range().Ptr())
			}
			continue
		}
		v, err := convert.Convert(v, cty.Bool)
		if err != nil || v.IsNull() || !v.IsKnown() {
			fail(Fail, "Invalid condition result", "The condition is not true or false.", a.Condition.Range().Ptr())
			continue
		}
		if v.True() {
			continue
		}
		// The text writer shows the values of the condition's references,
		// as Terraform does, from Expression and EvalContext.
		d := fail(Fail, "Test assertion failed", errorMessage(a, ctx), a.Condition.Range().Ptr())
		d.Expression, d.EvalContext = a.Condition, ctx
	}
}

// printable is text from a run (an error_message that quotes the model's
// answer, an error a server sent) with its control and invisible
// characters escaped, lines and tabs kept: a report is read on a terminal,
// and nothing a model says may drive it.
func printable(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == utf8.RuneError:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// errorMessage is the assertion's error_message, or its source text when
// it cannot be evaluated.
func errorMessage(a *Assert, ctx *hcl.EvalContext) string {
	v, diags := a.ErrorMessage.Value(ctx)
	if !diags.HasErrors() {
		if sv, err := convert.Convert(v, cty.String); err == nil && !sv.IsNull() && sv.IsKnown() {
			return sv.AsString()
		}
	}
	return "The assertion failed (its error_message could not be evaluated)."
}

// runPlan is the run's plan: a copy of the compiled one with the run's
// overrides applied.
func runPlan(r *Run) (*plan.Plan, error) {
	b, err := plan.Encode(r.Config.Plan)
	if err != nil {
		return nil, err
	}
	p, err := plan.Decode(b)
	if err != nil {
		return nil, err
	}
	for _, o := range r.OverrideTools {
		t := p.Tool(o.Target)
		if t == nil {
			return nil, fmt.Errorf("%s is not in the plan", o.Target)
		}
		switch {
		case o.Result != nil:
			t.Executor = plan.Executor{Kind: "fixed", Fixed: &plan.FixedExec{Output: *o.Result}}
		case o.Error != "":
			t.Executor = plan.Executor{Kind: "fixed", Fixed: &plan.FixedExec{Error: o.Error}}
		default:
			t.Executor = plan.Executor{Kind: "command", Command: &plan.CommandExec{Argv: literals(o.Command), Dir: absDir(r.File.Dir)}}
		}
	}
	for _, o := range r.OverrideServers {
		s := p.MCPServer(o.Target)
		if s == nil {
			return nil, fmt.Errorf("%s is not in the plan", o.Target)
		}
		if o.URL != "" {
			s.URL, s.Command = plan.Lit(o.URL), nil
		} else {
			s.URL, s.Command = plan.String{}, literals(o.Command)
		}
	}
	if len(r.Budget) > 0 {
		overrideBudget(p, r)
	}
	return p, nil
}

// overrideBudget gives the run's agent (or best_of_n block) a budget of
// its own: its budget with the run's values.
func overrideBudget(p *plan.Plan, r *Run) {
	var addr *string
	if r.BestOfN != "" {
		addr = &p.BestOfNByAddress(r.BestOfN).Budget
	} else {
		addr = &p.Agent(r.Agent).Budget
	}
	b := p.Budget(*addr)
	b.Address = "budget.symbitest__" + r.Name
	for n := 2; p.Budget(b.Address).Address == b.Address; n++ {
		b.Address = fmt.Sprintf("budget.symbitest__%s_%d", r.Name, n)
	}
	for _, name := range sortedKeys(r.Budget) {
		_ = budgetFields[name](&b, r.Budget[name]) // checked by Load
	}
	p.Budgets = append(p.Budgets, b)
	*addr = b.Address
	p.Sort()
}

func literals(ss []string) []plan.String {
	out := make([]plan.String, len(ss))
	for i, s := range ss {
		out[i] = plan.Lit(s)
	}
	return out
}

func absDir(d string) string {
	if abs, err := filepath.Abs(d); err == nil {
		return abs
	}
	return d
}

// storePaths are the knowledge stores a plan opens, absolute, sorted (so
// runs lock them in one order).
func storePaths(p *plan.Plan, baseDir string) []string {
	var out []string
	for _, k := range p.Knowledge {
		path := k.Path
		if !filepath.IsAbs(path) {
			path = filepath.Join(baseDir, path)
		}
		out = append(out, absDir(path))
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// protected are the run's own files, which no builtin file tool of the
// run may read or write: the test file, the cassette, the script.
func protected(r *Run) []string {
	out := []string{r.File.Path}
	if r.Cassette != "" {
		out = append(out, r.Cassette)
	}
	if r.Script != "" {
		out = append(out, r.Script)
	}
	return out
}
