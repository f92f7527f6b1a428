// Command symbi-temporal is symbi's Temporal client and worker, in a binary
// of its own so that the Temporal SDK and grpc cost nothing to every other
// symbi invocation. symbi runs it for `symbi worker` and for the --temporal
// forms of run, runs, approve and deny; it answers in JSON lines
// (temporal/contract.Line) that symbi renders as it renders local runs.
// docs/temporal.md describes both.
package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/symbi-dev/symbi/engine"
	"github.com/symbi-dev/symbi/policy"
	_ "github.com/symbi-dev/symbi/policy/opa" // workflows decide Rego in the worker's process
	"github.com/symbi-dev/symbi/temporal"
	"github.com/symbi-dev/symbi/temporal/contract"
)

// Exit codes, as symbi's.
const (
	exitInvalid   = 2
	exitFailure   = 4
	exitCancelled = 130
)

type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

func main() { os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRoot(stdin, stdout, stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.msg != "" {
			fmt.Fprintln(stderr, "error:", ee.msg)
		}
		return ee.code
	}
	fmt.Fprintln(stderr, "error:", err)
	return exitInvalid
}

// conn are the connection flags every command has.
type conn struct {
	address, namespace string
}

func (c *conn) add(cmd *cobra.Command) {
	cmd.PersistentFlags().StringVar(&c.address, "address", "", "the Temporal service, host:port (default: $TEMPORAL_ADDRESS, else localhost:7233)")
	cmd.PersistentFlags().StringVar(&c.namespace, "namespace", "", "the Temporal namespace (default: $TEMPORAL_NAMESPACE, else default)")
}

func (c *conn) dial(ctx context.Context, log io.Writer) (client.Client, error) {
	cl, err := temporal.Connection{Address: c.address, Namespace: c.namespace, Log: log}.Dial(ctx)
	if err != nil {
		return nil, &exitError{code: exitFailure, msg: err.Error()}
	}
	return cl, nil
}

func newRoot(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	var c conn
	root := &cobra.Command{
		Use:   "symbi-temporal",
		Short: "symbi's Temporal worker and client (symbi runs it; see docs/temporal.md)",
		Long: `symbi-temporal runs symbi's plans on Temporal. Run a worker with

    symbi-temporal worker [PATH]        (or: symbi worker [PATH])

and start runs with symbi run --temporal. The other commands answer symbi in
JSON lines: run (a request on standard input), runs, show, pending, decide.

The connection comes from --address and --namespace, else from the
environment the Temporal CLI reads (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE,
TEMPORAL_API_KEY, TEMPORAL_TLS, TEMPORAL_TLS_CLIENT_CERT_PATH,
TEMPORAL_TLS_CLIENT_KEY_PATH, TEMPORAL_TLS_SERVER_CA_CERT_PATH,
TEMPORAL_TLS_SERVER_NAME, TEMPORAL_TLS_DISABLE_HOST_VERIFICATION).`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	c.add(root)
	root.AddCommand(newWorkerCmd(&c), newRunCmd(&c), newRunsCmd(&c), newShowCmd(&c), newPendingCmd(&c), newDecideCmd(&c))
	return root
}

// line writes one contract.Line.
func line(w io.Writer, l contract.Line) {
	b, err := json.Marshal(l)
	if err != nil {
		b, _ = json.Marshal(contract.Line{Error: err.Error(), Code: exitFailure})
	}
	w.Write(append(b, '\n'))
}

func newWorkerCmd(c *conn) *cobra.Command {
	var (
		queue      string
		engineIdle time.Duration
		maxEngines int
	)
	cmd := &cobra.Command{
		Use:   "worker [PATH]",
		Short: "Run a worker: execute symbi runs from the task queue until interrupted",
		Long: `Run a worker that executes symbi runs taken from the task queue, until
SIGINT or SIGTERM. PATH is the configuration directory (or a .hcl file in
it): every run's plan names the files it references with their digests, and
the worker refuses a run whose files differ from its own copies in PATH.
Start as many workers as you like, on as many machines: runs spread over
them, and a run whose worker dies goes on on another.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			base, err := baseDir(args)
			if err != nil {
				return &exitError{code: exitInvalid, msg: err.Error()}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			cl, err := c.dial(ctx, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer cl.Close()
			w, acts := temporal.NewWorker(cl, temporal.WorkerOptions{BaseDir: base, TaskQueue: queue, EngineIdle: engineIdle, MaxEngines: maxEngines})
			defer acts.Close()
			if err := w.Start(); err != nil {
				return &exitError{code: exitFailure, msg: err.Error()}
			}
			if queue == "" {
				queue = contract.DefaultTaskQueue
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "worker on task queue %s, configuration %s (Ctrl-C stops it)\n", queue, base)
			<-ctx.Done()
			w.Stop()
			return nil
		},
	}
	cmd.Flags().StringVar(&queue, "task-queue", "", "the task queue (default "+contract.DefaultTaskQueue+")")
	cmd.Flags().DurationVar(&engineIdle, "engine-idle", temporal.DefaultEngineIdle, "how long to keep a plan's engine, and the MCP servers its runs started, once no activity uses it")
	cmd.Flags().IntVar(&maxEngines, "max-engines", temporal.DefaultMaxEngines, "the most plans' engines to keep; past it the one idle longest is closed")
	return cmd
}

// baseDir is the configuration directory PATH names: the directory, or
// the directory of a file.
func baseDir(args []string) (string, error) {
	path := "."
	if len(args) > 0 {
		path = args[0]
	}
	st, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if !st.IsDir() {
		path = filepath.Dir(path)
	}
	return filepath.Abs(path)
}

func newRunCmd(c *conn) *cobra.Command {
	return &cobra.Command{
		Use:   "run",
		Short: "Start a run from the request on standard input and follow it (symbi run --temporal)",
		Long: `Read a run request (temporal/contract.Request, JSON) from standard input,
start its workflow, and write JSON lines on standard output: the run's id,
every event as it happens, and the run's output. SIGINT cancels the
workflow (the run ends as cancelled); a second one exits at once.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			out := bufio.NewWriter(cmd.OutOrStdout())
			defer out.Flush()
			emit := func(l contract.Line) {
				line(out, l)
				out.Flush()
			}
			var req contract.Request
			if err := json.NewDecoder(cmd.InOrStdin()).Decode(&req); err != nil {
				emit(contract.Line{Error: "reading the run request: " + err.Error(), Code: exitInvalid})
				return &exitError{code: exitInvalid}
			}
			if req.Address != "" {
				c.address = req.Address
			}
			if req.Namespace != "" {
				c.namespace = req.Namespace
			}
			ctx := cmd.Context()
			cl, err := c.dial(ctx, cmd.ErrOrStderr())
			if err != nil {
				emit(contract.Line{Error: err.Error(), Code: exitFailure})
				return &exitError{code: exitFailure}
			}
			defer cl.Close()
			tc := &temporal.Client{C: cl}
			id := temporal.NewRunID(time.Now(), rand.Reader)
			if err := tc.Start(ctx, id, req.TaskQueue, req.Start); err != nil {
				emit(contract.Line{Error: "starting the run: " + err.Error(), Code: exitFailure})
				return &exitError{code: exitFailure}
			}
			emit(contract.Line{Run: id})
			if req.Detach {
				return nil
			}
			// The first SIGINT cancels the workflow, and the run's end is
			// still shown; the second exits.
			sig := make(chan os.Signal, 2)
			signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
			defer signal.Stop(sig)
			go func() {
				<-sig
				cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				defer cancel()
				if err := tc.Cancel(cctx, id); err != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "cancelling run %s: %v\n", id, err)
				}
				<-sig
				os.Exit(exitCancelled)
			}()
			o, err := tc.Follow(ctx, id, func(ev engine.Event) { emit(contract.Line{Event: &ev}) })
			if err != nil {
				msg, kind := temporal.FailureMessage(err)
				code := exitFailure
				if kind == temporal.ErrCannotStart || kind == temporal.ErrUnsupported {
					code = exitInvalid
				}
				emit(contract.Line{Run: id, Error: fmt.Sprintf("run %s: %s", id, msg), Code: code})
				return &exitError{code: code}
			}
			emit(contract.Line{Output: &o})
			return nil
		},
	}
}

func newRunsCmd(c *conn) *cobra.Command {
	var limit int
	cmd := &cobra.Command{
		Use:   "runs",
		Short: "List the runs on the Temporal service, newest first (symbi runs --temporal)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := c.dial(cmd.Context(), cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer cl.Close()
			runs, err := (&temporal.Client{C: cl}).List(cmd.Context(), limit)
			if err != nil {
				return &exitError{code: exitFailure, msg: err.Error()}
			}
			for _, r := range runs {
				line(cmd.OutOrStdout(), contract.Line{Summary: &r})
			}
			return nil
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 100, "list at most this many runs (0: all)")
	return cmd
}

func newShowCmd(c *conn) *cobra.Command {
	return &cobra.Command{
		Use:   "show ID",
		Short: "Print a run's timeline as journal lines (symbi runs show --temporal ID)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := c.dial(cmd.Context(), cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer cl.Close()
			evs, err := (&temporal.Client{C: cl}).Events(cmd.Context(), args[0])
			switch {
			case temporal.IsNotFound(err):
				return &exitError{code: exitInvalid, msg: fmt.Sprintf("no run %s on the Temporal service", args[0])}
			case err != nil:
				return &exitError{code: exitFailure, msg: fmt.Sprintf("run %s: %v", args[0], err)}
			}
			for i := range evs {
				line(cmd.OutOrStdout(), contract.Line{Journal: &evs[i]})
			}
			return nil
		},
	}
}

func newPendingCmd(c *conn) *cobra.Command {
	return &cobra.Command{
		Use:   "pending [RUN]",
		Short: "List approval requests waiting (of one run, or of every open run)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := c.dial(cmd.Context(), cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer cl.Close()
			tc := &temporal.Client{C: cl}
			var reqs []policy.Request
			if len(args) == 1 {
				reqs, err = tc.Pending(cmd.Context(), args[0])
			} else {
				reqs, err = tc.PendingAll(cmd.Context())
			}
			if err != nil {
				return &exitError{code: exitFailure, msg: err.Error()}
			}
			for i := range reqs {
				line(cmd.OutOrStdout(), contract.Line{Request: &reqs[i]})
			}
			return nil
		},
	}
}

func newDecideCmd(c *conn) *cobra.Command {
	var approve, deny bool
	var by, reason string
	cmd := &cobra.Command{
		Use:   "decide ID (--approve | --deny) --by WHO",
		Short: "Decide a waiting approval request (symbi approve/deny --temporal ID)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if approve == deny {
				return &exitError{code: exitInvalid, msg: "give exactly one of --approve and --deny"}
			}
			cl, err := c.dial(cmd.Context(), cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer cl.Close()
			rec, b, err := (&temporal.Client{C: cl}).Decide(cmd.Context(), args[0], approve, by, reason)
			switch {
			case errors.Is(err, temporal.ErrNoSuchRequest):
				return &exitError{code: exitInvalid, msg: err.Error() + " (run `symbi approve --temporal` to list pending requests)"}
			case err != nil:
				return &exitError{code: exitFailure, msg: err.Error()}
			}
			line(cmd.OutOrStdout(), contract.Line{Record: &rec, Binding: &b})
			return nil
		},
	}
	cmd.Flags().BoolVar(&approve, "approve", false, "approve the action")
	cmd.Flags().BoolVar(&deny, "deny", false, "deny the action")
	cmd.Flags().StringVar(&by, "by", "", "who decides")
	cmd.Flags().StringVar(&reason, "reason", "", "why, for the run's timeline")
	cmd.MarkFlagRequired("by")
	return cmd
}
