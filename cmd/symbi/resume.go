package main

import (
	"errors"
	"io/fs"
	"os"

	"github.com/spf13/cobra"

	"github.com/symbi-dev/symbi/engine"
	"github.com/symbi-dev/symbi/journal"
	"github.com/symbi-dev/symbi/policy"
)

func newResumeCmd() *cobra.Command {
	var where stateDirFlags
	var jsonOut bool
	var obs observeFlags
	var approval approverFlags
	cmd := &cobra.Command{
		Annotations: map[string]string{trimAnnotation: trimLater},
		Use:         "resume ID",
		Example:     "  symbi resume 20261202T133000Z-4f3a9c1b\n  symbi resume latest",
		Short:       "Continue an interrupted run from its journal",
		Long: `Continue run ID from its last complete iteration: the plan saved with the run
is loaded (the configuration may have changed since), the conversation is
rebuilt from the journal, and the run appends to the same journal. An
iteration that was cut short is done again. Output and exit codes are those
of "symbi run". The run is found in --state-dir, or in the state_dir of the
configuration named by --config, or in ./.symbi.

Resume refuses (exit 2) a run that another process is running or resuming,
a journal whose lines do not verify or that is unsigned (symbi runs verify
says why), and a saved plan that is not the one the run started with.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			stateDir, err := where.resolve(cmd)
			if err != nil {
				return err
			}
			id, err := resolveRunID(stateDir, args[0])
			if err != nil {
				return err
			}
			// The lock comes first: the interrupted attempt's approval
			// requests are withdrawn only once no process can still be
			// waiting on them.
			lock, err := journal.Lock(stateDir, id)
			switch {
			case errors.Is(err, fs.ErrNotExist):
				return exitWith(exitInvalid, "no run %s in %s", id, stateDir)
			case err != nil:
				return exitWith(exitInvalid, "run %s cannot be resumed: %v", id, err)
			}
			defer lock.Unlock()
			withdrawRequests(stateDir, id)
			approver, err := approval.newApprover(cmd, stateDir)
			if err != nil {
				return err
			}
			ctx, stop := interruptible(cmd.Context(), cmd.ErrOrStderr())
			defer stop()
			out := newRunPrinter(cmd.OutOrStdout(), cmd.ErrOrStderr(), jsonOut)
			defer out.close()
			// The environment's telemetry only: the plan is the saved one,
			// read by the engine.
			o, err := observe(ctx, nil, "", obs, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer o.close()
			ctx = o.join(ctx)
			opts := engine.Options{
				LookupEnv: os.LookupEnv,
				OnEvent:   out.event,
				Approver:  approver,
			}
			o.apply(&opts)
			res, err := engine.ResumeLocked(ctx, lock, opts)
			if err != nil {
				if errors.Is(err, engine.ErrRunFinished) || errors.Is(err, engine.ErrNotResumable) {
					return exitWith(exitInvalid, "%v", err)
				}
				if ctx.Err() != nil {
					return exitWith(exitCancelled, "cancelled")
				}
				return exitWith(exitFailure, "%v", err)
			}
			out.summary(res)
			return terminationExit(res.Termination)
		},
	}
	where.add(cmd, false)
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print one JSON event per line on standard output")
	obs.add(cmd, false)
	approval.add(cmd)
	return cmd
}

// withdrawRequests takes the approval requests the interrupted run (or its
// delegations) left in the queue out of it: the process that waited for
// their answers is gone, and the resumed run asks again. A queue that
// cannot be read is left alone: the resumed run works without it.
func withdrawRequests(stateDir, runID string) {
	_, _ = policy.NewQueue(stateDir).Withdraw(runID)
}
