package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/symbi-dev/symbi/budget"
	"github.com/symbi-dev/symbi/engine"
)

// The run's summary reports the usage reserved and not settled beside the
// usage: on the stderr line when there is any, always in --json.
func TestSummaryReportsTheReserved(t *testing.T) {
	res := &engine.Result{RunID: "r", Agent: "agent.a", Termination: engine.Termination{Reason: engine.Completed},
		Usage: budget.Amount{ModelCalls: 1, TotalTokens: 79}}
	var stdout, stderr bytes.Buffer
	newRunPrinter(&stdout, &stderr, false).summary(res)
	if strings.Contains(stderr.String(), "reserved") {
		t.Errorf("nothing reserved, but the summary says %q", stderr.String())
	}
	res.Reserved = budget.Amount{ModelCalls: 1, TotalTokens: 612, CostUSD: 0.0006}
	stderr.Reset()
	newRunPrinter(&stdout, &stderr, false).summary(res)
	if !strings.Contains(stderr.String(), "79 tokens · $0.0000 · reserved 1 model call, 612 tokens, $0.0006 · ") {
		t.Errorf("summary %q", stderr.String())
	}
	stdout.Reset()
	newRunPrinter(&stdout, &stderr, true).summary(res)
	var s struct {
		Usage, Reserved budget.Amount
	}
	if err := json.Unmarshal(stdout.Bytes(), &s); err != nil || s.Reserved.TotalTokens != 612 || s.Usage.TotalTokens != 79 {
		t.Errorf("--json summary %s (%v)", stdout.String(), err)
	}
}
