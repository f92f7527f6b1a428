package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/symbi-dev/symbi/policy"
)

// approvalFlags are shared by approve and deny; approve alone has the
// edit and remember flags.
type approvalFlags struct {
	where     stateDirFlags // the state directory, which holds approvals/
	by        string
	reason    string
	arguments string
	remember  bool
	widen     []string
	forTime   time.Duration
	// temporal decides a request of a run on Temporal instead.
	temporal temporalFlags
}

func (f *approvalFlags) add(cmd *cobra.Command) {
	f.where.add(cmd, false)
	cmd.Flags().StringVar(&f.by, "by", "", "who decides (default: $USER)")
	cmd.Flags().StringVar(&f.reason, "reason", "", "why, for the journal (and, on deny, for the agent)")
	f.temporal.add(cmd, false, false)
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
	answer := policy.ApprovalRecord{Approved: approved, By: f.person(), Reason: f.reason}
	var rule *policy.Standing
	if approved {
		if answer, rule, err = f.edits(q, id, answer); err != nil {
			return err
		}
	}
	rec, bound, err := q.Answer(id, answer)
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
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "%s %s by %s at %s\n", verb, rec.ID, policy.EscapeLine(rec.By), rec.At.UTC().Format(time.RFC3339))
	// What the signed decision is bound to: a run that asked about other
	// arguments refuses it.
	if bound.RunID != "" {
		fmt.Fprintf(out, "  run:    %s\n", policy.EscapeLine(bound.RunID))
	}
	fmt.Fprintf(out, "  digest: %s\n", digestOrNone(bound.ArgumentsDigest))
	if len(rec.Arguments) > 0 {
		fmt.Fprintln(out, "  with these arguments instead of the model's (the run checks them against the tool's schema and gates them again):")
		io.WriteString(out, policy.RenderArguments(rec.Arguments, "    ", policy.PromptWidth, policy.PromptArgumentLines))
		fmt.Fprintf(out, "  their digest: %s\n", policy.ArgumentsDigest(policy.Action{Type: policy.ToolCall, Arguments: rec.Arguments}))
	}
	if rule != nil {
		fmt.Fprintf(out, "  remembered for the rest of the run: %s\n", rule)
	}
	return nil
}

// edits adds to an approval what --arguments and --remember say, and the
// rule as the run will remember it, shown from the request's arguments.
func (f *approvalFlags) edits(q *policy.Queue, id string, rec policy.ApprovalRecord) (policy.ApprovalRecord, *policy.Standing, error) {
	if !f.remember && (len(f.widen) > 0 || f.forTime != 0) {
		return rec, nil, exitWith(exitInvalid, "--widen and --for shape a rule to remember: give --remember too")
	}
	if f.arguments == "" && !f.remember {
		return rec, nil, nil
	}
	req, err := q.Request(id)
	if errors.Is(err, policy.ErrUnknownRequest) {
		return rec, nil, exitWith(exitInvalid, "%v (run `symbi approve` to list pending requests)", err)
	} else if err != nil {
		return rec, nil, exitWith(exitFailure, "%v", err)
	}
	if req.Action.Type != policy.ToolCall {
		return rec, nil, exitWith(exitInvalid, "%s asks about a %s: only a tool call's arguments can be edited or remembered", id, req.Action.Type)
	}
	shown := req.Arguments
	if f.arguments != "" {
		args, err := policy.ParseArguments([]byte(f.arguments))
		if err != nil {
			return rec, nil, exitWith(exitInvalid, "--arguments: %v", err)
		}
		rec.Arguments, shown = args, args
	}
	if !f.remember {
		return rec, nil, nil
	}
	var until time.Time
	if f.forTime < 0 {
		return rec, nil, exitWith(exitInvalid, "--for %s: want a positive duration", f.forTime)
	} else if f.forTime > 0 {
		until = time.Now().Add(f.forTime)
	}
	rule, err := policy.NewStanding(policy.Action{Type: policy.ToolCall, Tool: req.Action.Tool, Arguments: shown}, f.widen, until)
	if err != nil {
		return rec, nil, exitWith(exitInvalid, "--remember: %v", err)
	}
	rec.Remember = &policy.Remember{Widen: f.widen, Until: until}
	return rec, &rule, nil
}

func digestOrNone(d string) string {
	if d == "" {
		return "(no digest)"
	}
	return policy.EscapeLine(d)
}

func newApproveCmd() *cobra.Command {
	var f approvalFlags
	cmd := &cobra.Command{
		Use:   "approve [ID]",
		Short: "Approve a pending action (as asked, with edited arguments, or remembered), or list pending requests",
		Long: `An agent whose action needs a person (an ask decision, or a tool with
approval = "always") and that runs without a terminal writes a request to
<state_dir>/approvals/ and waits. symbi approve ID lets the action run;
symbi deny ID refuses it. With no ID, symbi approve lists pending requests,
each with its arguments (secrets redacted) and their digest, the one the
terminal prompt shows. A decision is signed with the state directory's key
and bound to the request's run, action and arguments' digest: the waiting
run ignores any decision without such a proof.

--arguments '{...}' approves other arguments than the model's (a tool call's,
a JSON object): the waiting run checks them against the tool's schema and puts
them through the policies again, and the model is told its call ran with
edited arguments. --remember approves and remembers: for the rest of the run
(or --for a duration), a call of the same tool with the same arguments is
approved without asking; --widen name=glob (repeatable) lets one argument
vary, as a glob. The rule is printed as the run will hold it; it never covers
another tool, an argument more or fewer, or a value the globs do not match,
and it never overrides a deny. Both are signed with the decision.

The queue is in --state-dir, or in the state_dir of the configuration named
by --config, or in ./.symbi.

With --temporal, the requests are those runs on Temporal wait on (their ids
are RUN~aN), and a decision is an Update to the run's workflow, bound in the
same way to the request's run, action and arguments' digest.`,
		Example: `  symbi approve                                   # list pending requests
  symbi approve 3f9c1a2b7d4e --reason "checked the path"
  symbi approve 3f9c1a2b7d4e --arguments '{"path":"notes/today.md"}'
  symbi approve 3f9c1a2b7d4e --remember --widen 'path=notes/*' --for 1h`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.temporal.on() {
				if len(args) == 1 {
					return decideTemporal(cmd, &f.temporal, &f, args[0], true)
				}
				return pendingTemporal(cmd, &f.temporal)
			}
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
				listRequest(out, r)
			}
			return nil
		},
	}
	f.add(cmd)
	cmd.Flags().StringVar(&f.arguments, "arguments", "", "approve these arguments (a JSON object) instead of the model's")
	cmd.Flags().BoolVar(&f.remember, "remember", false, "approve, and approve calls of the same tool with the same arguments for the rest of the run")
	cmd.Flags().StringArrayVar(&f.widen, "widen", nil, "with --remember: let an argument vary, name=glob (repeatable)")
	cmd.Flags().DurationVar(&f.forTime, "for", 0, "with --remember: how long the rule lasts (default: the rest of the run)")
	return cmd
}

// listRequest prints one pending request as `symbi approve` lists it: the
// arguments as every approver shows them (bounded, escaped, redacted by the
// run that asked) and the digest of the exact arguments, which the
// decision will be bound to. The file is only what the waiting run wrote:
// the run itself accepts a decision only for the arguments it holds.
func listRequest(out io.Writer, r policy.Request) {
	fmt.Fprintf(out, "%s  %s\n", policy.EscapeLine(r.ID), policy.EscapeLine(fmt.Sprintf("agent %s wants %s", r.Agent, r.Action)))
	args := r.Arguments
	if len(args) == 0 && len(r.Action.Arguments) > 0 {
		args = r.Action.Arguments // a request written before arguments moved out of the action
	}
	if len(args) > 0 {
		fmt.Fprintln(out, "    arguments:")
		io.WriteString(out, policy.RenderArguments(args, "      ", policy.PromptWidth, policy.PromptArgumentLines))
	}
	fmt.Fprintf(out, "    digest:    %s\n", digestOrNone(r.ArgumentsDigest))
	if r.Reason != "" {
		fmt.Fprintf(out, "    why asked: %s\n", policy.EscapeLine(r.Reason))
	}
	if r.RunID != "" {
		fmt.Fprintf(out, "    run:       %s\n", policy.EscapeLine(r.RunID))
	}
	fmt.Fprintf(out, "    expires:   %s\n", r.Expires.UTC().Format(time.RFC3339))
}
