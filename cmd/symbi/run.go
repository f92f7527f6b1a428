package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/symbi-dev/symbi/engine"
	"github.com/symbi-dev/symbi/internal/exepages"
	"github.com/symbi-dev/symbi/interp"
	"github.com/symbi-dev/symbi/journal"
	"github.com/symbi-dev/symbi/journal/render"
	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/provider/cassette"
)

func newRunCmd() *cobra.Command {
	var (
		agent, bestOf, inputFile, stateDir string
		jsonOut, detach, local             bool
		tape                               tapeFlags
		obs                                observeFlags
		approval                           approverFlags
		tf                                 temporalFlags
	)
	cmd := &cobra.Command{
		Annotations: map[string]string{trimAnnotation: trimLater},
		Use:         "run [PATH] [INPUT]",
		Short:       "Compile a configuration (or load a saved plan) and run one agent",
		Long: `Compile PATH (a .hcl file, a directory, or a plan saved with "symbi plan -out")
and run one agent on INPUT. INPUT is the second argument, the file named by
--input-file, or standard input when it is not a terminal.

The answer streams to standard output; tool calls, policy decisions and
observations go to standard error, with a summary at the end. --json prints
one JSON event per line on standard output instead.

--record FILE writes every model exchange of the run (each request, and the
response or error as received) to a cassette, with every secret the run
knows redacted; --replay FILE answers the models from one instead, offline
and without keys, and a request that differs from the recording fails the
run with a diff of the two requests. With --record-missing, such a request
is recorded again from the live model and the cassette rewritten.
docs/testing.md has the format and the matching rules.

Telemetry is off unless configured: OTEL_EXPORTER_OTLP_ENDPOINT (or a
telemetry block in the symbi block) sends the run's traces and metrics to an
OpenTelemetry collector, OTEL_TRACES_EXPORTER=console prints the spans, and a
run started with TRACEPARENT in its environment joins that trace. The summary
names the run's trace id. --decision-log writes every gate decision in OPA's
decision-log format. See docs/telemetry.md.

An action that needs a person (an ask, approval = "always") is put to the
terminal when standard input is one; without one, to the approval queue
(symbi approve, symbi deny); with --non-interactive, or under CI ($CI set,
no terminal), to nobody: it is refused at once, with the code no_approver,
unless --approver queue. A person who does not answer within
--approval-timeout refuses it (approval_timeout), as does a no
(denied_by_approver). Nothing waits without end.

With --temporal the run is a workflow on a Temporal service, executed by
whichever "symbi worker" takes it (docs/temporal.md): the output, summary and
exit codes are a local run's; Ctrl-C cancels the workflow; --detach prints
the run's id and returns (follow it with symbi runs show --temporal ID).
--temporal takes the service's address as its value (--temporal=HOST:PORT),
or, bare, as the argument before PATH: symbi run --temporal HOST:PORT PATH
INPUT.

Exit codes: 0 done, 2 invalid configuration or usage, 3 stopped by a policy
denial, a budget or a limit, 4 runtime failure (a request that differs from
the cassette among them), 130 cancelled.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if tf.address == temporalFromEnv && len(args) == 3 {
				return nil // symbi run --temporal ADDRESS PATH INPUT
			}
			return cobra.MaximumNArgs(2)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 3 {
				tf.address, args = args[0], args[1:]
			}
			if local && tf.on() {
				return exitWith(exitInvalid, "--local and --temporal contradict each other")
			}
			if agent != "" && bestOf != "" {
				// A best_of_n block names the agent its candidates run;
				// running it for another agent, or ignoring either flag,
				// would run something nobody asked for.
				return exitWith(exitInvalid, "--agent and --best-of cannot be used together: a best_of_n block runs the agent its agent attribute names; give --best-of alone, or --agent alone")
			}
			path := "."
			if len(args) > 0 {
				path = args[0]
			}
			var input string
			var haveInput bool
			if len(args) > 1 {
				input, haveInput = args[1], true
			}
			if inputFile != "" {
				if haveInput {
					return exitWith(exitInvalid, "give the input as an argument or with --input-file, not both")
				}
				b, err := os.ReadFile(inputFile)
				if err != nil {
					return exitWith(exitInvalid, "%v", err)
				}
				input, haveInput = string(b), true
			}
			if !haveInput {
				if in := cmd.InOrStdin(); !isTerminal(in) {
					b, err := io.ReadAll(in)
					if err != nil {
						return exitWith(exitInvalid, "reading the input: %v", err)
					}
					input, haveInput = strings.TrimRight(string(b), "\r\n"), len(b) > 0
				}
			}
			p, baseDir, err := loadRunnable(cmd, path)
			if err != nil {
				return err
			}
			if !haveInput {
				input, haveInput = inputVariable(p)
			}
			if !haveInput {
				return exitWith(exitInvalid, "no input: give it as the second argument, with --input-file, on standard input, or as the default of a variable \"input\"")
			}
			if err := tape.check(); err != nil {
				return err
			}
			protected := runSources(cmd, path)
			if f := tape.file(); f != "" {
				protected = append(protected, f)
			}
			req := runRequest{agent: agent, bestOf: bestOf, input: input, json: jsonOut, stateDir: stateDir, protected: protected, tape: tape, observe: obs, approval: &approval}
			if !local {
				tf.fromSettings(p.Settings.Temporal, os.Getenv)
			}
			if detach && !tf.on() {
				return exitWith(exitInvalid, "--detach needs --temporal (or a temporal block in the symbi settings): a local run lives in this process")
			}
			if tf.on() {
				if tape.file() != "" {
					return exitWith(exitInvalid, "--record and --replay work on a run in this process; a run on Temporal calls its models from the workers (use --local)")
				}
				return runTemporal(cmd, p, baseDir, req, &tf, detach)
			}
			return runPlan(cmd, p, baseDir, req)
		},
	}
	addVarFlags(cmd)
	cmd.Flags().StringVar(&agent, "agent", "", "the agent to run (optional when the configuration has one)")
	cmd.Flags().StringVar(&bestOf, "best-of", "", "run a best_of_n block instead of a single agent (not with --agent: the block names its agent)")
	cmd.Flags().StringVar(&inputFile, "input-file", "", "read the input from this file")
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print one JSON event per line on standard output")
	cmd.Flags().StringVar(&stateDir, "state-dir", "", "where journals are written (default: the configuration's state_dir)")
	cmd.Flags().StringVar(&tape.record, "record", "", "record every model exchange to this cassette file (overwritten)")
	cmd.Flags().StringVar(&tape.replay, "replay", "", "answer the models from this cassette file instead of calling them")
	cmd.Flags().BoolVar(&tape.missing, "record-missing", false, "with --replay: record again from the live model what does not match, and rewrite the cassette")
	cmd.Flags().BoolVar(&tape.chunks, "record-chunks", false, "keep the streamed chunks of what is recorded, with their timing")
	obs.add(cmd, false)
	approval.add(cmd)
	tf.add(cmd, false, true)
	cmd.Flags().BoolVar(&detach, "detach", false, "with --temporal: print the run's id and return")
	cmd.Flags().BoolVar(&local, "local", false, "run in this process even when the settings have a temporal block")
	return cmd
}

// tapeFlags are run's cassette flags.
type tapeFlags struct {
	record, replay  string
	missing, chunks bool
}

func (t tapeFlags) check() error {
	switch {
	case t.record != "" && t.replay != "":
		return exitWith(exitInvalid, "--record and --replay exclude each other: to record what no longer matches, give --replay FILE --record-missing")
	case t.missing && t.replay == "":
		return exitWith(exitInvalid, "--record-missing goes with --replay FILE")
	case t.chunks && t.record == "" && !t.missing:
		return exitWith(exitInvalid, "--record-chunks goes with --record FILE or --record-missing")
	}
	return nil
}

func (t tapeFlags) file() string {
	if t.record != "" {
		return t.record
	}
	return t.replay
}

// session is the cassette session the flags ask for; nil without one.
func (t tapeFlags) session() (*cassette.Session, error) {
	switch {
	case t.record != "":
		return cassette.NewSession(nil, cassette.Options{Mode: cassette.Record, Name: t.record, Chunks: t.chunks}), nil
	case t.replay != "":
		c, err := cassette.Load(t.replay)
		if err != nil {
			return nil, exitWith(exitInvalid, "--replay: %v", err)
		}
		mode := cassette.Replay
		if t.missing {
			mode = cassette.Update
		}
		return cassette.NewSession(c, cassette.Options{Mode: mode, Name: t.replay, Chunks: t.chunks}), nil
	}
	return nil, nil
}

// finish saves what the session recorded and tells what it did, on
// stderr, or as one JSON line on stdout with --json (which keeps stderr
// empty); a cancelled run leaves the cassette as it was.
func (t tapeFlags) finish(sess *cassette.Session, res *engine.Result, stdout, stderr io.Writer, jsonOut bool) error {
	if sess == nil {
		return nil
	}
	var msg string
	var saved *cassette.Cassette
	switch {
	case res != nil && res.Termination.Reason == engine.Cancelled:
		msg = fmt.Sprintf("the run was cancelled: %s is left as it was", t.file())
	case t.record != "":
		saved = sess.Cassette()
		msg = fmt.Sprintf("recorded %s to %s", count(len(saved.Exchanges), "model exchange", "model exchanges"), t.record)
	case t.missing && sess.LiveFailed() && !sess.Changed():
		msg = fmt.Sprintf("recording from the live model failed: %s is left as it was", t.replay)
	case t.missing && !sess.Changed():
		msg = fmt.Sprintf("every request matched %s: it is unchanged", t.replay)
	case t.missing:
		saved = sess.Cassette()
		if n := len(sess.Mismatches()); n > 0 {
			msg = fmt.Sprintf("%s recorded again from the live model: %s now holds %s", count(n, "request", "requests"), t.replay, count(len(saved.Exchanges), "model exchange", "model exchanges"))
		} else {
			msg = fmt.Sprintf("%s now holds the requests its %s answer", t.replay, count(len(saved.Exchanges), "model exchange", "model exchanges"))
		}
	case len(sess.Mismatches()) > 0:
		var b strings.Builder
		b.WriteString("\nThe run's requests differ from the cassette:\n\n")
		for _, m := range sess.Mismatches() {
			fmt.Fprintf(&b, "%v\n\n", m)
		}
		fmt.Fprintf(&b, "If the change is meant, record them again: --replay %s --record-missing", t.replay)
		msg = b.String()
	}
	if saved != nil {
		if err := saved.Save(t.file()); err != nil {
			return exitWith(exitFailure, "%s: %v", t.file(), err)
		}
	}
	if jsonOut {
		out := map[string]any{"event": "cassette", "file": t.file(), "written": saved != nil, "message": strings.TrimSpace(msg)}
		var mismatches []map[string]any
		for _, m := range sess.Mismatches() {
			mismatches = append(mismatches, map[string]any{"model": m.Model, "call": m.Call, "exchange": m.Index + 1, "diff": m.Diff})
		}
		if len(mismatches) > 0 {
			out["mismatches"] = mismatches
		}
		jsonLine(stdout, out)
		return nil
	}
	if msg != "" {
		fmt.Fprintln(stderr, msg)
	}
	return nil
}

// loadRunnable compiles a configuration, or reads a saved plan: a .json
// file is a plan.
func loadRunnable(cmd *cobra.Command, path string) (*plan.Plan, string, error) {
	if isPlanFile(path) {
		p, err := interp.LoadPlanFile(path)
		if err != nil {
			return nil, "", exitWith(exitInvalid, "%v", err)
		}
		return p, filepath.Dir(path), nil
	}
	cfg, err := loadConfig(cmd, path, false)
	if err != nil {
		return nil, "", err
	}
	return cfg.Plan, cfg.BaseDir, nil
}

// inputVariable is the value of the configuration's "input" variable, the
// input of a run that was given none.
func inputVariable(p *plan.Plan) (string, bool) {
	for _, v := range p.Variables {
		if v.Name == "input" && len(v.Value) > 0 {
			var s string
			if json.Unmarshal(v.Value, &s) == nil && s != "" {
				return s, true
			}
		}
	}
	return "", false
}

type runRequest struct {
	agent, bestOf, input, stateDir string
	json                           bool
	protected                      []string // files of the run besides the plan's own (engine.Options.Protected)
	tape                           tapeFlags
	observe                        observeFlags
	approval                       *approverFlags
}

// runSources are the files a run was made from that its plan does not list:
// the var files, and the saved plan when PATH is one. No builtin file tool
// may touch them.
func runSources(cmd *cobra.Command, path string) []string {
	out, _ := cmd.Flags().GetStringArray("var-file")
	if isPlanFile(path) {
		out = append(out, path)
	}
	return out
}

// isPlanFile says whether PATH names a saved plan rather than a
// configuration: a .json file.
func isPlanFile(path string) bool {
	st, err := os.Stat(path)
	return err == nil && !st.IsDir() && strings.EqualFold(filepath.Ext(path), ".json")
}

func runPlan(cmd *cobra.Command, p *plan.Plan, baseDir string, req runRequest) (err error) {
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	ctx, stop := interruptible(cmd.Context(), stderr)
	defer stop()

	out := newRunPrinter(stdout, stderr, req.json)
	defer out.close()
	stateDir := req.stateDir
	if stateDir == "" {
		stateDir = engine.DefaultStateDir(p, baseDir)
	}
	if req.approval == nil {
		req.approval = &approverFlags{}
	}
	approver, err := req.approval.newApprover(cmd, stateDir)
	if err != nil {
		return err
	}
	sess, err := req.tape.session()
	if err != nil {
		return err
	}
	var tape engine.Cassette // never a typed nil
	if sess != nil {
		tape = sess
	}
	obs, err := observe(ctx, p, baseDir, req.observe, stderr)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := obs.close(); cerr != nil {
			if err == nil {
				err = exitWith(exitFailure, "%v", cerr)
			} else {
				fmt.Fprintf(stderr, "error: %v\n", cerr)
			}
		}
	}()
	ctx = obs.join(ctx)
	opts := engine.Options{
		BaseDir:   baseDir,
		StateDir:  stateDir,
		Protected: req.protected,
		LookupEnv: os.LookupEnv,
		OnEvent:   out.event,
		Approver:  approver,
		Cassette:  tape,
	}
	obs.apply(&opts)
	e, err := engine.New(p, opts)
	if err != nil {
		return exitWith(exitInvalid, "%v", err)
	}
	defer func() {
		// Close waits for the journal's final fsync: a journal that did not
		// reach the disk is a failure, whatever the run's outcome; a run
		// that already failed or stopped keeps its exit code and says so.
		if cerr := e.Close(); cerr != nil {
			if err == nil {
				err = exitWith(exitFailure, "%v", cerr)
			} else {
				fmt.Fprintf(stderr, "error: %v\n", cerr)
			}
		}
	}()

	var res *engine.Result
	if req.bestOf != "" {
		addr := req.bestOf
		if !strings.HasPrefix(addr, "best_of_n.") {
			addr = "best_of_n." + addr
		}
		if p.BestOfNByAddress(addr) == nil {
			return exitWith(exitInvalid, "unknown best_of_n %q", req.bestOf)
		}
		res, err = e.RunBestOfN(ctx, addr, req.input, engine.RunOptions{})
	} else {
		res, err = e.Run(ctx, req.agent, req.input, engine.RunOptions{})
	}
	if err != nil {
		if errors.Is(err, engine.ErrUnknownAgent) || errors.Is(err, engine.ErrToolDrift) {
			return exitWith(exitInvalid, "%v", err)
		}
		if ctx.Err() != nil {
			return exitWith(exitCancelled, "cancelled")
		}
		return exitWith(exitFailure, "%v", err)
	}
	out.stateDir = stateDir
	out.summary(res)
	if err := req.tape.finish(sess, res, stdout, stderr, req.json); err != nil {
		return err
	}
	return terminationExit(res.Termination)
}

// terminationExit maps how a run ended to the exit code; the summary has
// already said why, so the error carries no message.
func terminationExit(t engine.Termination) error {
	if errors.Is(t.Err, engine.ErrToolDrift) {
		// A server's new tool list differed from the lock file mid-run: the
		// same verdict as at the start.
		return exitWith(exitInvalid, "")
	}
	switch t.Reason {
	case engine.Completed:
		return nil
	case engine.MaxIterations, engine.BudgetExceeded, engine.TimedOut, engine.PolicyDenial, engine.AgentTerminated:
		return exitWith(exitStopped, "")
	case engine.Cancelled:
		return exitWith(exitCancelled, "")
	}
	return exitWith(exitFailure, "")
}

// interruptible cancels ctx on the first Ctrl-C (the run ends cleanly and
// journals it) and exits at once on the second.
func interruptible(parent context.Context, stderr io.Writer) (context.Context, func()) {
	ctx, cancel := context.WithCancel(parent)
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case <-sig:
		case <-done:
			return
		}
		fmt.Fprintln(stderr, "\ncancelling (press Ctrl-C again to exit now)")
		cancel()
		select {
		case <-sig:
			os.Exit(exitCancelled)
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sig)
		close(done)
		cancel()
	}
}

// isTerminal (repl.go) says whether a reader or writer is a terminal.

// jsonLine writes v as one JSON line.
func jsonLine(w io.Writer, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	w.Write(append(b, '\n'))
}

// runPrinter shows a run on the terminal: content on stdout as it
// streams, a compact line per tool call, decision and observation on
// stderr, a spinner while the model has not started answering (only when
// stderr is a terminal), and a summary. With --json every event is one
// line on stdout instead.
type runPrinter struct {
	stdout, stderr io.Writer
	json           bool
	spin           *spinner
	midLine        bool   // stdout's last byte was not a newline
	stateDir       string // named in the summary when it is not ./.symbi
	// dim shows reasoning dimmed: stderr is a terminal and NO_COLOR unset.
	dim bool
	// reasoning: stderr is in the middle of a model's streamed reasoning,
	// whose last byte was not a newline when reasoningMidLine.
	reasoning, reasoningMidLine bool
	// calls are the tool calls the model is writing (tool_call_delta), by
	// index, for the progress line a terminal shows; progress says the
	// line is on the screen.
	calls    map[int]*callProgress
	progress bool
	// live: stderr is a terminal, where lines can be redrawn.
	live bool
	// results counts the run's own tool results, for trimAfterStart.
	results int
}

// callProgress is a tool call being written: its tool and the end of its
// arguments so far (bounded: the line shows only the end).
type callProgress struct {
	name string
	args string
}

// maxProgressArgs bounds what is kept of a call's arguments for the line.
const maxProgressArgs = 512

func newRunPrinter(stdout, stderr io.Writer, jsonOut bool) *runPrinter {
	p := &runPrinter{stdout: stdout, stderr: stderr, json: jsonOut}
	if !jsonOut && isTerminal(stderr) {
		p.spin = newSpinner(stderr)
		p.dim = os.Getenv("NO_COLOR") == ""
		p.live = true
	}
	return p
}

// close stops the spinner and ends a streamed answer's line, whatever
// ended the run: the shell's prompt (or the error printed after a failed
// run) starts on a line of its own.
func (p *runPrinter) close() {
	if p.spin != nil {
		p.spin.stop()
	}
	p.clearProgress()
	p.endLine()
}

// event is called by the engine, one event at a time.
func (p *runPrinter) event(ev engine.Event) {
	p.trimAfterStart(ev)
	if p.json {
		jsonLine(p.stdout, ev)
		return
	}
	if p.spin != nil {
		p.spin.pause()
	}
	switch ev.Type {
	case engine.ModelFirstEvent:
		return // the spinner stopped for it; nothing more to show
	case engine.ToolCallDelta:
		if ev.Depth == 0 && p.live {
			p.showCallProgress(ev)
		}
		return
	}
	p.clearProgress()
	if ev.Type == journal.ReasoningComplete {
		p.calls = nil
	}
	if ev.Type == engine.ReasoningDelta {
		if ev.Depth == 0 {
			p.showReasoning(ev.Delta)
		}
		return
	}
	if ev.Type == engine.ContentDelta {
		if ev.Depth == 0 {
			p.endReasoning()
			io.WriteString(p.stdout, ev.Delta)
			p.midLine = !strings.HasSuffix(ev.Delta, "\n")
		}
		return
	}
	if lines := render.Live(ev.Journal(), ev.Depth); len(lines) > 0 {
		p.endLine()
		indent := strings.Repeat("  ", ev.Depth)
		for _, line := range lines {
			fmt.Fprintf(p.stderr, "%s%s\n", indent, line)
		}
	}
	if p.spin != nil && waitsForModel(ev.Type) {
		p.spin.start()
	}
}

// trimAfterStart drops the executable's pages once the loop has gone
// round twice (the run's second tool result): what package init mapped
// and what started the run (the compile, the plan's encoding, building the
// toolbox and the gates) is not run again, and a long run's resident set
// is then the loop's own code (docs/benchmarks.md, "Phase 4" and "Phase
// 5"). run and resume do not drop the pages as they start, as other
// commands do: a one-round run, which never gets here, took 0.93-0.95 of
// the time without that, for a peak of 17.6 MiB against 14.8.
func (p *runPrinter) trimAfterStart(ev engine.Event) {
	if ev.Type != journal.ToolResult || ev.Depth != 0 {
		return
	}
	if p.results++; p.results == 2 {
		_, _ = exepages.Trim()
	}
}

// showCallProgress redraws the progress line of the tool call a
// tool_call_delta belongs to (on a terminal only: the "→" line of the
// turn says the same once it is whole).
func (p *runPrinter) showCallProgress(ev engine.Event) {
	var d journal.ToolCallDeltaData
	if json.Unmarshal(ev.Data, &d) != nil {
		return
	}
	if p.calls == nil {
		p.calls = map[int]*callProgress{}
	}
	c := p.calls[d.Index]
	if c == nil {
		c = &callProgress{}
		p.calls[d.Index] = c
	}
	if d.Name != "" {
		c.name = d.Name
	}
	c.args += ev.Delta
	if len(c.args) > maxProgressArgs {
		c.args = strings.ToValidUTF8(c.args[len(c.args)-maxProgressArgs:], "")
	}
	p.endLine()
	fmt.Fprintf(p.stderr, "\r\033[K%s", render.ToolCallProgress(c.name, c.args, terminalWidth(p.stderr)-1))
	p.progress = true
}

// clearProgress takes the progress line off the screen before anything
// else is written.
func (p *runPrinter) clearProgress() {
	if p.progress {
		io.WriteString(p.stderr, "\r\033[K")
		p.progress = false
	}
}

// terminalWidth is w's width when it is a terminal, else 80.
func terminalWidth(w io.Writer) int {
	if f, ok := w.(*os.File); ok {
		if width, _, err := term.GetSize(int(f.Fd())); err == nil && width > 20 {
			return width
		}
	}
	return 80
}

// endLine finishes a streamed answer's line (and streamed reasoning)
// before stderr writes, so the two streams do not interleave mid-line on a
// terminal.
func (p *runPrinter) endLine() {
	p.endReasoning()
	if p.midLine {
		io.WriteString(p.stdout, "\n")
		p.midLine = false
	}
}

// Reasoning is dimmed with SGR 2 (faint) and set back with SGR 0.
const (
	dimOn  = "\x1b[2m"
	dimOff = "\x1b[0m"
)

// showReasoning writes a piece of the model's reasoning to stderr, dimmed
// on a terminal: it is not the answer, which alone goes to stdout. The
// model's control characters are dropped, so its text cannot drive the
// terminal.
func (p *runPrinter) showReasoning(text string) {
	text = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' || !unicode.IsControl(r) {
			return r
		}
		return -1
	}, text)
	if text == "" {
		return
	}
	if !p.reasoning {
		p.endLine()
		if p.dim {
			io.WriteString(p.stderr, dimOn)
		}
		p.reasoning = true
	}
	io.WriteString(p.stderr, text)
	p.reasoningMidLine = !strings.HasSuffix(text, "\n")
}

// endReasoning ends streamed reasoning: the dimming, and its line.
func (p *runPrinter) endReasoning() {
	if !p.reasoning {
		return
	}
	if p.dim {
		io.WriteString(p.stderr, dimOff)
	}
	if p.reasoningMidLine {
		io.WriteString(p.stderr, "\n")
	}
	p.reasoning, p.reasoningMidLine = false, false
}

func waitsForModel(typ string) bool {
	switch typ {
	case "started", "observations_collected", "model_routed", "model_call_started":
		return true
	}
	return false
}

// summary closes the run on stderr (or as a JSON line with --json).
func (p *runPrinter) summary(res *engine.Result) {
	if p.spin != nil {
		p.spin.stop()
	}
	if p.json {
		line := map[string]any{
			"event": "summary", "run": res.RunID, "agent": res.Agent, "answer": res.Answer,
			"termination": res.Termination, "iterations": res.Iterations, "usage": res.Usage,
			"reserved": res.Reserved, "elapsed_ms": res.Elapsed.Milliseconds(), "shadow": res.Shadow, "approvals": res.Approvals,
		}
		if res.TraceID != "" {
			line["trace_id"] = res.TraceID
		}
		jsonLine(p.stdout, line)
		return
	}
	p.endLine()
	t := res.Termination
	where := ""
	if p.stateDir != "" && filepath.Clean(p.stateDir) != defaultStateDir {
		// `symbi runs` and `resume` look in ./.symbi unless told otherwise.
		where = " (--state-dir " + p.stateDir + ")"
	}
	reserved := render.Reserved(res.Reserved)
	if reserved != "" {
		reserved = " · " + reserved
	}
	trace := ""
	if res.TraceID != "" {
		trace = " · trace " + res.TraceID
	}
	fmt.Fprintf(p.stderr, "\n%s · %d iteration%s · %d tokens · $%.4f%s · %s · run %s%s%s\n",
		t.String(), res.Iterations, plural(res.Iterations), res.Usage.TotalTokens, res.Usage.CostUSD, reserved,
		res.Elapsed.Round(1e6), res.RunID, where, trace)
	if !res.Approvals.Zero() {
		fmt.Fprintf(p.stderr, "approvals: %s\n", res.Approvals)
	}
	for _, s := range res.Shadow {
		fmt.Fprintf(p.stderr, "shadow: %s\n", s)
	}
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// spinner shows that the model is working until its first token arrives.
// Every write to the terminal happens under mu, so a frame never lands in
// the middle of a printed line.
type spinner struct {
	w      io.Writer
	mu     sync.Mutex
	active bool
	shown  bool
	frame  int
	quit   chan struct{}
	done   chan struct{}
}

func newSpinner(w io.Writer) *spinner {
	s := &spinner{w: w, quit: make(chan struct{}), done: make(chan struct{})}
	go s.loop()
	return s
}

func (s *spinner) loop() {
	defer close(s.done)
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	frames := []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}
	for {
		select {
		case <-s.quit:
			return
		case <-t.C:
		}
		s.mu.Lock()
		if s.active {
			fmt.Fprintf(s.w, "\r%s thinking", frames[s.frame%len(frames)])
			s.frame++
			s.shown = true
		}
		s.mu.Unlock()
	}
}

func (s *spinner) start() {
	s.mu.Lock()
	s.active = true
	s.mu.Unlock()
}

// pause hides the spinner and clears its line.
func (s *spinner) pause() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.active = false
	if s.shown {
		io.WriteString(s.w, "\r\033[K")
		s.shown = false
	}
}

func (s *spinner) stop() {
	s.pause()
	select {
	case <-s.quit:
	default:
		close(s.quit)
	}
	<-s.done
}
