package engine

import (
	"strings"
	"testing"

	"github.com/symbi-dev/symbi/journal"
)

// The router prices a call's output by the estimate the reservation holds
// (estimated_output_tokens_per_call), not by the max_output_tokens cap: a
// priced model whose cap would cost more than the budget has left, but whose
// estimate fits, is chosen. Before, it was rejected ("estimated cost $4.1…
// over the remaining budget") whatever the estimate said.
func TestRouterPricesTheOutputEstimateNotTheCap(t *testing.T) {
	hcl := `
model "priced" {
  provider = "scripted"
  script   = "script.json"
  pricing {
    input_usd_per_mtok  = 1
    output_usd_per_mtok = 1000
  }
}
router "r" {
  models = [model.priced]
}
budget "b" {
  max_cost_usd                     = 1
  estimated_output_tokens_per_call = 200
}
agent "a" {
  model  = router.r
  budget = budget.b
}
`
	// 4096 output tokens at $1000/Mtok are $4.096, over the $1; the 200
	// estimated are $0.20.
	p, dir := fixture{"main.hcl": hcl, "script.json": `{"turns":[{"content":"fine","usage":{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12}}]}`}.compile(t)
	e, _ := newEngine(t, p, dir, nil)
	res := mustRun(t, e, "a", "x", RunOptions{})
	if res.Termination.Reason != Completed || res.Answer != "fine" {
		t.Fatalf("got %s, answer %q", res.Termination, res.Answer)
	}
	routed := eventsOf(t, journalOf(t, e, res.RunID), journal.ModelRouted)
	if len(routed) != 1 {
		t.Fatalf("%d model_routed events", len(routed))
	}
	var d journal.ModelRoutedData
	if err := routed[0].Decode(&d); err != nil {
		t.Fatal(err)
	}
	if d.Model != "model.priced" || len(d.Rejected) != 0 {
		t.Errorf("model_routed %s", routed[0].Data)
	}

	// The estimate still counts: one that does not fit is rejected, with
	// the estimate's cost in the reason.
	p, dir = fixture{"main.hcl": strings.Replace(hcl, "= 200", "= 2000", 1), "script.json": `{"turns":[{"content":"fine"}]}`}.compile(t)
	e, _ = newEngine(t, p, dir, nil)
	res = mustRun(t, e, "a", "x", RunOptions{})
	if res.Termination.Reason != Failed || !strings.Contains(res.Termination.Detail, "estimated cost $2.0") {
		t.Errorf("an estimate over the budget: %s", res.Termination)
	}
}
