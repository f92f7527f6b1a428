package main

import (
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/symbi-dev/symbi/policy"
)

// approverFlags choose who decides what a policy asks a person, for the
// commands that run agents (run, resume).
type approverFlags struct {
	nonInteractive bool
	approver       string
	timeout        time.Duration
}

func (f *approverFlags) add(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&f.nonInteractive, "non-interactive", false, "never prompt at the terminal: an action that needs a person is refused at once (no_approver) unless --approver queue")
	cmd.Flags().StringVar(&f.approver, "approver", "auto", "who decides what needs a person: auto, terminal, queue (symbi approve/deny) or none")
	cmd.Flags().DurationVar(&f.timeout, "approval-timeout", 0, "how long a person has to answer (default: 10m for the queue, none at a terminal); past it the action is refused (approval_timeout)")
}

// ciDetected reports whether symbi runs under CI: $CI set to true (as
// GitHub Actions, GitLab CI and most others set it) with no terminal on
// standard input. Nobody is there to answer a prompt, nor, unless
// configured, the approval queue.
func ciDetected(cmd *cobra.Command) bool {
	switch strings.ToLower(os.Getenv("CI")) {
	case "true", "1", "yes":
		return !isTerminal(cmd.InOrStdin())
	}
	return false
}

// newApprover is who the run asks. auto: the terminal prompt when
// standard input is a terminal; without one, the file queue in the state
// directory (answered with symbi approve and symbi deny) unless
// --non-interactive or CI says nobody will answer, and then none: an ask
// is refused at once with the code no_approver, never left to hang.
// terminal, queue and none choose explicitly (queue is how a
// non-interactive run or CI still asks someone).
func (f *approverFlags) newApprover(cmd *cobra.Command, stateDir string) (policy.Approver, error) {
	in := cmd.InOrStdin()
	terminal := func() policy.Approver {
		a := policy.NewTerminalApprover(in, cmd.ErrOrStderr(), os.Getenv("USER"))
		a.Timeout = f.timeout
		return a
	}
	queue := func() policy.Approver {
		return &policy.QueueApprover{Queue: policy.NewQueue(stateDir), Timeout: f.timeout}
	}
	switch f.approver {
	case "terminal":
		switch {
		case f.nonInteractive:
			return nil, exitWith(exitInvalid, "--approver terminal and --non-interactive contradict each other")
		case !isTerminal(in):
			return nil, exitWith(exitInvalid, "--approver terminal: standard input is not a terminal; use --approver queue (and symbi approve) or none")
		}
		return terminal(), nil
	case "queue":
		return queue(), nil
	case "none":
		return nil, nil
	case "auto", "":
	default:
		return nil, exitWith(exitInvalid, "--approver %q: want auto, terminal, queue or none", f.approver)
	}
	switch {
	case isTerminal(in) && !f.nonInteractive:
		return terminal(), nil
	case f.nonInteractive || ciDetected(cmd):
		return nil, nil
	}
	return queue(), nil
}
