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

	"github.com/symbi-dev/symbi/engine"
	"github.com/symbi-dev/symbi/interp"
	"github.com/symbi-dev/symbi/journal"
	"github.com/symbi-dev/symbi/journal/render"
	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/policy"
)

func newRunCmd() *cobra.Command {
	var (
		agent, bestOf, inputFile, stateDir string
		jsonOut, detach, local             bool
		tf                                 temporalFlags
	)
	cmd := &cobra.Command{
		Use:   "run [PATH] [INPUT]",
		Short: "Compile a configuration (or load a saved plan) and run one agent",
		Long: `Compile PATH (a .hcl file, a directory, or a plan saved with "symbi plan -out")
and run one agent on INPUT. INPUT is the second argument, the file named by
--input-file, or standard input when it is not a terminal.

The answer streams to standard output; tool calls, policy decisions and
observations go to standard error, with a summary at the end. --json prints
one JSON event per line on standard output instead.

With --temporal the run is a workflow on a Temporal service, executed by
whichever "symbi worker" takes it (docs/temporal.md): the output, summary and
exit codes are a local run's; Ctrl-C cancels the workflow; --detach prints
the run's id and returns (follow it with symbi runs show --temporal ID).
--temporal takes the service's address as its value (--temporal=HOST:PORT),
or, bare, as the argument before PATH: symbi run --temporal HOST:PORT PATH
INPUT.

Exit codes: 0 done, 2 invalid configuration or usage, 3 stopped by a policy
denial, a budget or a limit, 4 runtime failure, 130 cancelled.`,
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
			req := runRequest{agent: agent, bestOf: bestOf, input: input, json: jsonOut, stateDir: stateDir, protected: runSources(cmd, path)}
			if !local {
				tf.fromSettings(p.Settings.Temporal, os.Getenv)
			}
			if detach && !tf.on() {
				return exitWith(exitInvalid, "--detach needs --temporal (or a temporal block in the symbi settings): a local run lives in this process")
			}
			if tf.on() {
				return runTemporal(cmd, p, baseDir, req, &tf, detach)
			}
			return runPlan(cmd, p, baseDir, req)
		},
	}
	addVarFlags(cmd)
	cmd.Flags().StringVar(&agent, "agent", "", "the agent to run (optional when the configuration has one)")
	cmd.Flags().StringVar(&bestOf, "best-of", "", "run a best_of_n block instead of a single agent")
	cmd.Flags().StringVar(&inputFile, "input-file", "", "read the input from this file")
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print one JSON event per line on standard output")
	cmd.Flags().StringVar(&stateDir, "state-dir", "", "where journals are written (default: the configuration's state_dir)")
	tf.add(cmd, false, true)
	cmd.Flags().BoolVar(&detach, "detach", false, "with --temporal: print the run's id and return")
	cmd.Flags().BoolVar(&local, "local", false, "run in this process even when the settings have a temporal block")
	return cmd
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
	e, err := engine.New(p, engine.Options{
		BaseDir:   baseDir,
		StateDir:  stateDir,
		Protected: req.protected,
		LookupEnv: os.LookupEnv,
		OnEvent:   out.event,
		Approver:  newApprover(cmd, stateDir),
	})
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
		if errors.Is(err, engine.ErrUnknownAgent) {
			return exitWith(exitInvalid, "%v", err)
		}
		if ctx.Err() != nil {
			return exitWith(exitCancelled, "cancelled")
		}
		return exitWith(exitFailure, "%v", err)
	}
	out.stateDir = stateDir
	out.summary(res)
	return terminationExit(res.Termination)
}

// terminationExit maps how a run ended to the exit code; the summary has
// already said why, so the error carries no message.
func terminationExit(t engine.Termination) error {
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

// newApprover is the terminal prompt when standard input is a terminal,
// and the file queue in the state directory (answered with `symbi approve`
// and `symbi deny`) otherwise.
func newApprover(cmd *cobra.Command, stateDir string) policy.Approver {
	if in := cmd.InOrStdin(); isTerminal(in) {
		return policy.NewTerminalApprover(in, cmd.ErrOrStderr(), os.Getenv("USER"))
	}
	return &policy.QueueApprover{Queue: policy.NewQueue(stateDir)}
}

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
}

func newRunPrinter(stdout, stderr io.Writer, jsonOut bool) *runPrinter {
	p := &runPrinter{stdout: stdout, stderr: stderr, json: jsonOut}
	if !jsonOut && isTerminal(stderr) {
		p.spin = newSpinner(stderr)
		p.dim = os.Getenv("NO_COLOR") == ""
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
	p.endLine()
}

// event is called by the engine, one event at a time.
func (p *runPrinter) event(ev engine.Event) {
	if p.json {
		jsonLine(p.stdout, ev)
		return
	}
	if p.spin != nil {
		p.spin.pause()
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
	if lines := render.Live(journalEvent(ev), ev.Depth); len(lines) > 0 {
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

// journalEvent is the journal line an engine event is (or, for a run
// without a journal, would be): what the renderer reads.
func journalEvent(ev engine.Event) journal.Event {
	return journal.Event{Seq: ev.Seq, Time: ev.Time, RunID: ev.RunID, Agent: ev.Agent, Iteration: ev.Iteration, Type: ev.Type, Data: ev.Data}
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
		jsonLine(p.stdout, map[string]any{
			"event": "summary", "run": res.RunID, "agent": res.Agent, "answer": res.Answer,
			"termination": res.Termination, "iterations": res.Iterations, "usage": res.Usage,
			"elapsed_ms": res.Elapsed.Milliseconds(),
		})
		return
	}
	p.endLine()
	t := res.Termination
	where := ""
	if p.stateDir != "" && filepath.Clean(p.stateDir) != defaultStateDir {
		// `symbi runs` and `resume` look in ./.symbi unless told otherwise.
		where = " (--state-dir " + p.stateDir + ")"
	}
	fmt.Fprintf(p.stderr, "\n%s · %d iteration%s · %d tokens · $%.4f · %s · run %s%s\n",
		t.String(), res.Iterations, plural(res.Iterations), res.Usage.TotalTokens, res.Usage.CostUSD,
		res.Elapsed.Round(1e6), res.RunID, where)
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
