package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/policy"
)

func newPolicyCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Evaluate and test policies",
		Long: `Author and test the policies that gate every action: built-in rules, OPA
(Rego v1) and Cedar. See docs/policy.md.`,
	}
	cmd.AddCommand(newPolicyEvalCmd(), newPolicyTestCmd(), newPolicyShadowCmd())
	return cmd
}

func newPolicyEvalCmd() *cobra.Command {
	var actionJSON, agent, contextJSON string
	var explain bool
	cmd := &cobra.Command{
		Use:   "eval POLICY --action JSON [PATH]",
		Short: "Decide one action with one policy",
		Long: `Decide one action with one policy and print the decision, its reason, the
engine and the time taken. POLICY is an address such as policy.rules.

  symbi policy eval policy.rules --action '{"type":"tool_call","tool":"shell","arguments":{"cmd":"sudo ls"}}'

--agent names the agent the action comes from (default: the first agent that
lists the policy); --context sets the trusted input.context object. --explain
adds the OPA input document and Rego trace, the Cedar policies that
determined the decision, or the rules. Exit code 0 when the policy lets the action through (allow, or modify),
3 otherwise (deny, ask, not_applicable).`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			addr := args[0]
			if !strings.HasPrefix(addr, "policy.") {
				addr = "policy." + addr
			}
			if actionJSON == "" {
				return exitWith(exitInvalid, "--action is required, e.g. --action '{\"type\":\"tool_call\",\"tool\":\"shell\",\"arguments\":{\"cmd\":\"ls\"}}'")
			}
			action, err := policy.ParseAction([]byte(actionJSON))
			if err != nil {
				return exitWith(exitInvalid, "--action: %v", err)
			}
			trusted, err := parseContext(contextJSON)
			if err != nil {
				return exitWith(exitInvalid, "--context: %v", err)
			}
			cfg, err := loadConfig(cmd, pathArg(args[1:]), true)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			gate, err := policy.FromPlan(ctx, cfg.Plan, addr, cfg.BaseDir)
			if err != nil {
				return exitWith(exitInvalid, "%v", err)
			}
			if agent == "" {
				agent = policy.AgentFor(cfg.Plan, addr)
			} else if !strings.HasPrefix(agent, "agent.") {
				agent = "agent." + agent
			}
			in := policy.NewInput(cfg.Plan, agent, action, trusted)
			start := time.Now()
			var d policy.Decision
			var explanation string
			if explain {
				d, explanation = policy.Explain(ctx, gate, in)
			} else {
				d = gate.Decide(ctx, in)
			}
			elapsed := time.Since(start)
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "decision: %s\n", d.Outcome)
			if d.Reason != "" {
				fmt.Fprintf(out, "reason:   %s\n", d.Reason)
			}
			if d.Outcome == policy.Modify {
				fmt.Fprintf(out, "arguments: %s\n", d.Arguments)
			}
			fmt.Fprintf(out, "engine:   %s\n", d.Engine)
			if d.EngineError {
				fmt.Fprintf(out, "error:    the engine reached no decision; the deny is an engine error, mapped to deny\n")
			}
			fmt.Fprintf(out, "policy:   %s\n", addr)
			if p := cfg.Plan.Policy(addr); p != nil {
				fmt.Fprintf(out, "version:  %s\n", policy.Version(*p))
				if p.Mode == plan.PolicyModeShadow {
					fmt.Fprintf(out, "mode:     shadow (a run journals this decision and does not enforce it)\n")
				}
			}
			fmt.Fprintf(out, "agent:    %s\n", agent)
			fmt.Fprintf(out, "time:     %s\n", elapsed.Round(time.Microsecond))
			if explain {
				fmt.Fprintf(out, "\n%s", explanation)
			}
			if d.Outcome == policy.Allow || d.Outcome == policy.Modify {
				return nil
			}
			return exitWith(exitStopped, "")
		},
	}
	cmd.Flags().StringVar(&actionJSON, "action", "", "the action as JSON: {\"type\":\"tool_call\",\"tool\":NAME,\"arguments\":{...}}")
	cmd.Flags().StringVar(&agent, "agent", "", "the agent proposing the action (default: the first agent that lists the policy)")
	cmd.Flags().StringVar(&contextJSON, "context", "", "trusted input.context as a JSON object")
	cmd.Flags().BoolVar(&explain, "explain", false, "show why: the OPA input and Rego trace, the determining Cedar policies, or the rules")
	addVarFlags(cmd)
	return cmd
}

func parseContext(s string) (map[string]any, error) {
	if s == "" {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("want a JSON object: %v", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("trailing data after the JSON object")
	}
	return m, nil
}

func newPolicyTestCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "test [PATH]",
		Short: "Run policy_test blocks and Rego test_ rules",
		Long: `Run every policy_test block of the configuration, then the Rego test_ rules
of every OPA policy's modules. Prints one PASS, FAIL, ERROR or SKIP line per
test and a final "N passed, N failed, N errors, N skipped", counted as opa
test counts them: a test that could not run to a verdict (its policy does not
load, a Rego error) is an error, a todo_test_ rule is skipped. Exit code 1 when
a test fails or errors.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := loadConfig(cmd, pathArg(args), true)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			results := policy.RunTests(cmd.Context(), cfg.Plan, cfg.BaseDir)
			for _, r := range results {
				status := "PASS"
				switch {
				case r.Skipped:
					status = "SKIP"
				case r.Errored:
					status = "ERROR"
				case !r.Passed:
					status = "FAIL"
				}
				fmt.Fprintf(out, "%s %s", status, r.Name)
				if r.Location != "" {
					fmt.Fprintf(out, " (%s)", r.Location)
				}
				fmt.Fprintln(out)
				if (status == "FAIL" || status == "ERROR") && r.Message != "" {
					for _, line := range strings.Split(r.Message, "\n") {
						fmt.Fprintf(out, "    %s\n", line)
					}
				}
			}
			counts := policy.CountTests(results)
			fmt.Fprintln(out, counts)
			if !counts.OK() {
				return exitWith(exitChanged, "")
			}
			return nil
		},
	}
	addVarFlags(cmd)
	return cmd
}
