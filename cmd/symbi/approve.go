package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/symbi-dev/symbi/policy"
)

// approvalFlags are shared by approve and deny.
type approvalFlags struct {
	where  stateDirFlags // the state directory, which holds approvals/
	by     string
	reason string
}

func (f *approvalFlags) add(cmd *cobra.Command) {
	f.where.add(cmd, false)
	cmd.Flags().StringVar(&f.by, "by", "", "who decides (default: $USER)")
	cmd.Flags().StringVar(&f.reason, "reason", "", "why, for the journal (and, on deny, for the agent)")
}

func (f *approvalFlags) person() string {
	if f.by != "" {
		return f.by
	}
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return "unknown"
}

// decideRequest records a decision on a pending request of the queue.
func decideRequest(cmd *cobra.Command, f *approvalFlags, id string, approved bool) error {
	stateDir, err := f.where.resolve(cmd)
	if err != nil {
		return err
	}
	q := policy.NewQueue(stateDir)
	rec, err := q.Decide(id, approved, f.person(), f.reason)
	switch {
	case errors.Is(err, policy.ErrUnknownRequest):
		return exitWith(exitInvalid, "%v (run `symbi approve` to list pending requests)", err)
	case errors.Is(err, policy.ErrAlreadyDecided):
		return exitWith(exitInvalid, "%v", err)
	case err != nil:
		return exitWith(exitFailure, "%v", err)
	}
	verb := "denied"
	if rec.Approved {
		verb = "approved"
	}
	fmt.Fprintf(cmd.OutOrStdout(), "%s %s by %s at %s\n", verb, rec.ID, rec.By, rec.At.UTC().Format(time.RFC3339))
	return nil
}

func newApproveCmd() *cobra.Command {
	var f approvalFlags
	cmd := &cobra.Command{
		Use:   "approve [ID]",
		Short: "Approve a pending action, or list pending approval requests",
		Long: `An agent whose action needs a person (an ask decision, or a tool with
approval = "always") and that runs without a terminal writes a request to
<state_dir>/approvals/ and waits. symbi approve ID lets the action run;
symbi deny ID refuses it. With no ID, symbi approve lists pending requests.
The queue is in --state-dir, or in the state_dir of the configuration named
by --config, or in ./.symbi.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				return decideRequest(cmd, &f, args[0], true)
			}
			stateDir, err := f.where.resolve(cmd)
			if err != nil {
				return err
			}
			reqs, err := policy.NewQueue(stateDir).Pending()
			if err != nil {
				return exitWith(exitFailure, "%v", err)
			}
			out := cmd.OutOrStdout()
			if len(reqs) == 0 {
				fmt.Fprintln(out, "no pending approval requests")
				return nil
			}
			for _, r := range reqs {
				fmt.Fprintf(out, "%s  agent %s wants %s\n", r.ID, r.Agent, r.Action)
				if len(r.Action.Arguments) > 0 {
					var args bytes.Buffer
					if json.Compact(&args, r.Action.Arguments) != nil {
						args.Reset()
						args.Write(r.Action.Arguments)
					}
					fmt.Fprintf(out, "    arguments: %s\n", args.Bytes())
				}
				if r.Reason != "" {
					fmt.Fprintf(out, "    why asked: %s\n", r.Reason)
				}
				if r.RunID != "" {
					fmt.Fprintf(out, "    run:       %s\n", r.RunID)
				}
				fmt.Fprintf(out, "    expires:   %s\n", r.Expires.UTC().Format(time.RFC3339))
			}
			return nil
		},
	}
	f.add(cmd)
	return cmd
}
