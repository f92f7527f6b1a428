// Command symbi compiles agent configurations written in HCL into execution
// plans and runs them. See README.md and docs/ for the language.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/symbi-dev/symbi/internal/exepages"
)

// Exit codes shared by every command (see docs/cli.md).
const (
	exitOK        = 0
	exitChanged   = 1 // fmt -check would change files; policy test failures; a journal that does not verify
	exitInvalid   = 2 // invalid configuration or usage
	exitStopped   = 3 // denied, budget or limit stop
	exitFailure   = 4 // runtime failure
	exitCancelled = 130
)

// exitError carries an exit code out of a command. Its message, when not
// empty, has not been printed yet.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

func exitWith(code int, format string, args ...any) error {
	return &exitError{code: code, msg: fmt.Sprintf(format, args...)}
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "symbi",
		Short: "Declare LLM agents in HCL, compile them to reviewable plans, run them under policy",
		Long: `symbi compiles agent configurations written in HCL (models, tools, policies,
budgets, recovery strategies, loop settings) into an execution plan, and runs
the plan as an Observe-Reason-Gate-Act loop in which OPA, Cedar or built-in
rules decide every action before it happens.

PATH is a .hcl file or a directory; a directory is every *.hcl in it, read as
one configuration. It defaults to the current directory.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRun: func(cmd *cobra.Command, _ []string) {
			// Package init mapped most of the binary into the process,
			// 64 KB per fault, for code no command runs again: let go of it
			// before the command starts (internal/exepages), unless the
			// command does so itself once under way (run, resume: see
			// runPrinter.trimAfterStart), so that a short run does not pay
			// for faulting back in what it uses. Failing to is harmless.
			if trimOnStart && cmd.Annotations[trimAnnotation] != trimLater {
				_, _ = exepages.Trim()
			}
		},
	}
	root.SetUsageFunc(usage)
	root.AddCommand(
		newValidateCmd(),
		newPlanCmd(),
		newFmtCmd(),
		newRunCmd(),
		newTestCmd(),
		newRunsCmd(),
		newResumeCmd(),
		newReplCmd(),
		newToolsCmd(),
		newPolicyCmd(),
		newLockCmd(),
		newApproveCmd(),
		newDenyCmd(),
		newWorkerCmd(),
		newVersionCmd(),
	)
	return root
}

// boolSuffix is what pflag v1.1.0 appends to every boolean flag in help
// ("--json[=true|false]"), though such flags are used bare.
const boolSuffix = "[=true|false]"

// flagUsages is pflag's flag table without boolSuffix, blanked rather than
// cut so the descriptions stay in one column.
func flagUsages(fs *pflag.FlagSet) string {
	return strings.ReplaceAll(fs.FlagUsages(), boolSuffix, strings.Repeat(" ", len(boolSuffix)))
}

// trimOnStart is set by main: the tests that run commands in their own
// process do not drop its pages.
var trimOnStart bool

// trimAnnotation marks, with trimLater, a command that drops the
// executable's pages itself once under way rather than as it starts.
const (
	trimAnnotation = "symbi/exepages"
	trimLater      = "later"
)

func main() {
	trimOnStart = true
	opa := useOPAHelper()
	code := run(context.Background(), os.Args[1:])
	_ = opa.Close() // the helper also exits when symbi does, its stdin closed
	os.Exit(code)
}

// run executes the command line and returns the process exit code; tests
// call it through testscript.
func run(ctx context.Context, args []string) int {
	root := newRootCmd()
	root.SetArgs(singleDashLongFlags(root, args))
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.msg != "" {
			fmt.Fprintln(os.Stderr, "Error:", ee.msg)
		}
		return ee.code
	}
	fmt.Fprintln(os.Stderr, "Error:", err)
	return exitInvalid
}
