package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/symbi-dev/symbi/engine"
	"github.com/symbi-dev/symbi/internal/sibling"
	"github.com/symbi-dev/symbi/interp"
	"github.com/symbi-dev/symbi/journal"
	"github.com/symbi-dev/symbi/journal/render"
	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/policy"
	"github.com/symbi-dev/symbi/temporal/contract"
)

// Runs on Temporal go through symbi-temporal, a binary of its own: the
// Temporal SDK and grpc would cost every symbi invocation its start-up
// time and memory (docs/benchmarks.md). symbi compiles, renders and sets
// the exit code as for a local run; symbi-temporal talks to the service
// and answers in JSON lines (temporal/contract.Line).

// temporalFlags select Temporal for run, runs, approve and deny.
type temporalFlags struct {
	address   string // "" when --temporal is absent; temporalFromEnv when given bare
	namespace string
	queue     string
}

// temporalFromEnv is --temporal given without an address: the environment's.
const temporalFromEnv = "-"

func (f *temporalFlags) add(cmd *cobra.Command, persistent, queue bool) {
	fs := cmd.Flags()
	if persistent {
		fs = cmd.PersistentFlags()
	}
	fs.StringVar(&f.address, "temporal", "", "on Temporal: the service's host:port, or bare for $TEMPORAL_ADDRESS (else localhost:7233)")
	fs.Lookup("temporal").NoOptDefVal = temporalFromEnv
	fs.StringVar(&f.namespace, "namespace", "", "with --temporal: the namespace (default: $TEMPORAL_NAMESPACE, else default)")
	if queue {
		fs.StringVar(&f.queue, "task-queue", "", "with --temporal: the task queue (default "+contract.DefaultTaskQueue+")")
	}
}

func (f *temporalFlags) on() bool { return f.address != "" }

// fromSettings fills in what the flags left out from the settings'
// temporal block (nil: nothing): the block turns Temporal on, and its
// address and namespace count only where the environment the Temporal
// CLI reads has none (flags, then the environment, then the block).
func (f *temporalFlags) fromSettings(s *plan.TemporalSettings, getenv func(string) string) {
	if s == nil {
		return
	}
	if (f.address == "" || f.address == temporalFromEnv) && s.Address != "" && getenv("TEMPORAL_ADDRESS") == "" {
		f.address = s.Address
	} else if f.address == "" {
		f.address = temporalFromEnv
	}
	if f.namespace == "" && s.Namespace != "" && getenv("TEMPORAL_NAMESPACE") == "" {
		f.namespace = s.Namespace
	}
	if f.queue == "" {
		f.queue = s.TaskQueue
	}
}

// args are the connection flags for symbi-temporal.
func (f *temporalFlags) args() []string {
	var out []string
	if f.address != "" && f.address != temporalFromEnv {
		out = append(out, "--address", f.address)
	}
	if f.namespace != "" {
		out = append(out, "--namespace", f.namespace)
	}
	return out
}

// findTemporal is symbi-temporal's path: beside symbi's own executable,
// then on PATH.
func findTemporal() (string, error) {
	path, dir, ok := sibling.Find(contract.Binary)
	if !ok {
		return "", exitWith(exitInvalid, "%s is neither beside symbi (in %s) nor on PATH: it is symbi's Temporal worker and client, a binary of its own; build both with `go build -o bin/ ./cmd/...` and run bin/symbi, or `go build -o %s ./cmd/%s`", contract.Binary, dir, dir, contract.Binary)
	}
	return path, nil
}

// workerSettings reads the temporal block of the worker's configuration
// into f. A directory that is not one configuration (examples/ holds
// many) has no settings to read: the worker goes on with the flags and the
// environment, and says so.
func workerSettings(cmd *cobra.Command, args []string, f *temporalFlags) error {
	path := "."
	if len(args) > 0 {
		path = args[0]
	}
	st, err := os.Stat(path)
	if err != nil {
		return exitWith(exitInvalid, "%v", err)
	}
	cfg, diags := interp.Compile(path, interp.Options{LookupEnv: os.LookupEnv, Validate: true})
	switch {
	case (cfg == nil || diags.HasErrors()) && st.IsDir():
		fmt.Fprintf(cmd.ErrOrStderr(), "note: %s is not one configuration, so no symbi settings (temporal block) are read from it; the worker takes the runs of any configuration in it\n", path)
	case cfg == nil || diags.HasErrors():
		return exitWith(exitInvalid, "%s", diags.Error())
	default:
		f.fromSettings(cfg.Plan.Settings.Temporal, os.Getenv)
	}
	return nil
}

// newWorkerCmd is `symbi worker`: symbi-temporal's worker in this process.
func newWorkerCmd() *cobra.Command {
	var (
		f          temporalFlags
		engineIdle time.Duration
		maxEngines int
	)
	cmd := &cobra.Command{
		Use:   "worker [PATH]",
		Short: "Run a Temporal worker that executes symbi runs (symbi run --temporal)",
		Long: `Run a worker that takes symbi runs from a Temporal task queue and executes
them, until SIGINT or SIGTERM. PATH is the configuration directory (or a
.hcl file in it): a run's plan names every file it references with its
digest, and a worker whose copy of a file differs refuses the run. Start
as many workers as you like; runs spread over them, and a run whose worker
dies goes on on another.

The connection comes from --temporal ADDRESS and --namespace, else from the
environment the Temporal CLI reads (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE,
TEMPORAL_API_KEY, TEMPORAL_TLS and the TEMPORAL_TLS_* paths).
The worker is symbi-temporal's (docs/temporal.md), found beside symbi or on
PATH.

Example:

    temporal server start-dev &        # a local Temporal service
    symbi worker examples/              # in one terminal
    symbi run --temporal examples/quickstart.hcl`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			bin, err := findTemporal()
			if err != nil {
				return err
			}
			if err := workerSettings(cmd, args, &f); err != nil {
				return err
			}
			argv := append([]string{bin}, f.args()...)
			argv = append(argv, "worker")
			if f.queue != "" {
				argv = append(argv, "--task-queue", f.queue)
			}
			if cmd.Flags().Changed("engine-idle") {
				argv = append(argv, "--engine-idle", engineIdle.String())
			}
			if cmd.Flags().Changed("max-engines") {
				argv = append(argv, "--max-engines", strconv.Itoa(maxEngines))
			}
			argv = append(argv, args...)
			return execTemporal(cmd, bin, argv)
		},
	}
	cmd.Flags().StringVar(&f.address, "temporal", "", "the Temporal service's host:port (default: $TEMPORAL_ADDRESS, else localhost:7233)")
	cmd.Flags().StringVar(&f.namespace, "namespace", "", "the namespace (default: $TEMPORAL_NAMESPACE, else default)")
	cmd.Flags().StringVar(&f.queue, "task-queue", "", "the task queue (default "+contract.DefaultTaskQueue+")")
	cmd.Flags().DurationVar(&engineIdle, "engine-idle", contract.DefaultEngineIdle, "how long the worker keeps a plan's engine, and the MCP servers its runs started, once no activity uses it")
	cmd.Flags().IntVar(&maxEngines, "max-engines", contract.DefaultMaxEngines, "the most plans' engines the worker keeps; past it the one idle longest is closed")
	return cmd
}

// temporalProcess runs symbi-temporal with args and hands each line it
// writes to onLine. stdin, when set, is written to it first.
type temporalProcess struct {
	cmd    *exec.Cmd
	lines  *bufio.Scanner
	stderr *strings.Builder
}

func startTemporal(cmd *cobra.Command, f *temporalFlags, stdin []byte, args ...string) (*temporalProcess, error) {
	bin, err := findTemporal()
	if err != nil {
		return nil, err
	}
	c := exec.Command(bin, append(f.args(), args...)...)
	if stdin != nil {
		c.Stdin = strings.NewReader(string(stdin))
	}
	// Its own process group: a Ctrl-C at the terminal reaches symbi alone,
	// which passes it on once (see runTemporal).
	c.SysProcAttr = childAttr()
	var errb strings.Builder
	c.Stderr = io.MultiWriter(&errb, cmd.ErrOrStderr())
	out, err := c.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := c.Start(); err != nil {
		return nil, exitWith(exitFailure, "running %s: %v", bin, err)
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	return &temporalProcess{cmd: c, lines: sc, stderr: &errb}, nil
}

// next is the process's next line; false at its end.
func (p *temporalProcess) next() (contract.Line, bool, error) {
	if !p.lines.Scan() {
		return contract.Line{}, false, p.lines.Err()
	}
	var l contract.Line
	if err := json.Unmarshal(p.lines.Bytes(), &l); err != nil {
		return contract.Line{}, false, fmt.Errorf("%s wrote %q: %w", contract.Binary, p.lines.Text(), err)
	}
	return l, true, nil
}

// wait ends the process; its exit code is symbi's when it failed and said
// nothing more.
func (p *temporalProcess) wait() error {
	err := p.cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		// symbi-temporal printed its error on stderr (passed through).
		return exitWith(ee.ExitCode(), "")
	}
	return err
}

// runTemporal is `symbi run --temporal`: the plan is started as a workflow
// and shown as a local run is, with the same summary and exit codes.
func runTemporal(cmd *cobra.Command, p *plan.Plan, baseDir string, req runRequest, f *temporalFlags, detach bool) error {
	e, err := engine.New(p, engine.Options{BaseDir: baseDir})
	if err != nil {
		return exitWith(exitInvalid, "%v", err)
	}
	var agent, bestOf string
	if req.bestOf != "" {
		// The block names its agent; its candidates are child workflows.
		bestOf = req.bestOf
		if !strings.HasPrefix(bestOf, "best_of_n.") {
			bestOf = "best_of_n." + bestOf
		}
		bon := p.BestOfNByAddress(bestOf)
		if bon == nil {
			return exitWith(exitInvalid, "unknown best_of_n %q", req.bestOf)
		}
		agent = bon.Agent
	} else if agent, err = e.AgentAddress(req.agent); err != nil {
		return exitWith(exitInvalid, "%v", err)
	}
	start, err := contract.NewStart(p, baseDir, agent, req.input)
	if err != nil {
		return exitWith(exitFailure, "%v", err)
	}
	start.BestOfN = bestOf
	body, err := json.Marshal(contract.Request{Start: start, TaskQueue: f.queue, Detach: detach})
	if err != nil {
		return exitWith(exitFailure, "%v", err)
	}
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	ctx, stop := interruptible(cmd.Context(), stderr)
	defer stop()
	proc, err := startTemporal(cmd, f, body, "run")
	if err != nil {
		return err
	}
	// Ctrl-C cancels the workflow: symbi-temporal asks the service, and
	// the run's end (cancelled) is still shown.
	go func() {
		<-ctx.Done()
		if cmd.Context().Err() == nil {
			proc.cmd.Process.Signal(os.Interrupt)
		}
	}()
	out := newRunPrinter(stdout, stderr, req.json)
	defer out.close()
	var res *engine.Result
	var failure *contract.Line
	for {
		l, ok, err := proc.next()
		if err != nil {
			proc.cmd.Process.Kill()
			proc.wait()
			return exitWith(exitFailure, "%v", err)
		}
		if !ok {
			break
		}
		switch {
		case l.Error != "":
			failure = &l
		case l.Event != nil:
			out.event(*l.Event)
		case l.Output != nil:
			res = l.Output.Result()
		case l.Run != "" && detach:
			fmt.Fprintln(stdout, l.Run)
		}
	}
	werr := proc.wait()
	switch {
	case failure != nil:
		code := failure.Code
		if code == 0 {
			code = exitFailure
		}
		return exitWith(code, "%s", failure.Error)
	case res != nil:
		out.summary(res)
		return terminationExit(res.Termination)
	case detach && werr == nil:
		return nil
	case werr != nil:
		return werr
	}
	return exitWith(exitFailure, "%s ended without the run's outcome", contract.Binary)
}

// temporalLines runs symbi-temporal with args to its end and returns its
// lines.
func temporalLines(cmd *cobra.Command, f *temporalFlags, args ...string) ([]contract.Line, error) {
	proc, err := startTemporal(cmd, f, nil, args...)
	if err != nil {
		return nil, err
	}
	var out []contract.Line
	for {
		l, ok, err := proc.next()
		if err != nil {
			proc.cmd.Process.Kill()
			proc.wait()
			return nil, exitWith(exitFailure, "%v", err)
		}
		if !ok {
			break
		}
		out = append(out, l)
	}
	return out, proc.wait()
}

// listTemporalRuns is `symbi runs --temporal`.
func listTemporalRuns(cmd *cobra.Command, f *temporalFlags, jsonOut bool) error {
	lines, err := temporalLines(cmd, f, "runs")
	if err != nil {
		return err
	}
	var runs []journal.RunSummary
	for _, l := range lines {
		if l.Summary != nil {
			runs = append(runs, *l.Summary)
		}
	}
	return printRuns(cmd.OutOrStdout(), runs, jsonOut, "on the Temporal service")
}

// showTemporalRun is `symbi runs show --temporal ID`: the timeline the
// run's workflow serves, rendered as a local journal is.
func showTemporalRun(cmd *cobra.Command, f *temporalFlags, id string, jsonOut bool) error {
	lines, err := temporalLines(cmd, f, "show", id)
	if err != nil {
		return err
	}
	var evs []journal.Event
	for _, l := range lines {
		if l.Journal != nil {
			evs = append(evs, *l.Journal)
		}
	}
	if jsonOut {
		for _, ev := range evs {
			jsonLine(cmd.OutOrStdout(), ev)
		}
		return nil
	}
	_, err = io.WriteString(cmd.OutOrStdout(), render.Timeline(evs))
	return err
}

// decideTemporal is `symbi approve|deny --temporal ID`.
func decideTemporal(cmd *cobra.Command, f *temporalFlags, af *approvalFlags, id string, approved bool) error {
	verb := "--deny"
	if approved {
		verb = "--approve"
	}
	args := []string{"decide", id, verb, "--by", af.person()}
	if af.reason != "" {
		args = append(args, "--reason", af.reason)
	}
	lines, err := temporalLines(cmd, f, args...)
	if err != nil {
		return err
	}
	for _, l := range lines {
		if l.Record == nil {
			continue
		}
		rec := *l.Record
		word := "denied"
		if rec.Approved {
			word = "approved"
		}
		out := cmd.OutOrStdout()
		fmt.Fprintf(out, "%s %s by %s at %s\n", word, rec.ID, policy.EscapeLine(rec.By), rec.At.UTC().Format(time.RFC3339))
		if l.Binding != nil {
			fmt.Fprintf(out, "  run:    %s\n", policy.EscapeLine(l.Binding.RunID))
			fmt.Fprintf(out, "  digest: %s\n", digestOrNone(l.Binding.ArgumentsDigest))
		}
	}
	return nil
}

// pendingTemporal is `symbi approve --temporal` without an ID.
func pendingTemporal(cmd *cobra.Command, f *temporalFlags) error {
	lines, err := temporalLines(cmd, f, "pending")
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	n := 0
	for _, l := range lines {
		if l.Request != nil {
			listRequest(out, *l.Request)
			n++
		}
	}
	if n == 0 {
		fmt.Fprintln(out, "no pending approval requests")
	}
	return nil
}
