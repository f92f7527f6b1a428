package engine

import (
	"encoding/json"
	"testing"

	"github.com/symbi-dev/symbi/budget"
	"github.com/symbi-dev/symbi/policy"
)

// A policy's run.usage is the budget's Amount converted: the conversion
// holds the fields equal, and this the JSON names Rego and Cedar read.
func TestPolicyUsageIsTheBudgetAmount(t *testing.T) {
	a := budget.Amount{ModelCalls: 1, ToolCalls: 2, PromptTokens: 3, CompletionTokens: 4, TotalTokens: 7, CostUSD: 0.5}
	got, err := json.Marshal(policy.Usage(a))
	if err != nil {
		t.Fatal(err)
	}
	want, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("run.usage = %s, the journal's usage = %s", got, want)
	}
}
