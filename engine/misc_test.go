package engine

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/symbi-dev/symbi/journal"
	"github.com/symbi-dev/symbi/policy"
	"github.com/symbi-dev/symbi/provider/fakeserver"
)

func eventsOf(t *testing.T, evs []journal.Event, typ string) []journal.Event {
	t.Helper()
	var out []journal.Event
	for _, ev := range evs {
		if ev.Type == typ {
			out = append(out, ev)
		}
	}
	return out
}

func TestRouterChoosesBeforeEveryCallAndJournalsRejections(t *testing.T) {
	hcl := `
model "cheap" {
  provider     = "scripted"
  script       = "script.json"
  capabilities = ["streaming"]
  quality      = 0.9
  pricing {
    input_usd_per_mtok  = 0.1
    output_usd_per_mtok = 0.1
  }
}
model "good" {
  provider     = "scripted"
  script       = "script.json"
  capabilities = ["tools", "streaming"]
  quality      = 0.8
  pricing {
    input_usd_per_mtok  = 1
    output_usd_per_mtok = 1
  }
}
router "r" {
  strategy = "lowest_cost"
  models   = [model.cheap, model.good]
}
tool "calculator" {
  description = "arithmetic"
  builtin     = "calculator"
}
policy "rules" {
  rules {
    allow = ["calculator"]
  }
}
agent "a" {
  model    = router.r
  tools    = [tool.calculator]
  policies = [policy.rules]
}
`
	p, dir := fixture{"main.hcl": hcl, "script.json": `{"turns":[{"tool_calls":[{"name":"calculator","arguments":{"expression":"6*7"}}]},{"content":"42"}]}`}.compile(t)
	e, _ := newEngine(t, p, dir, nil)
	res := mustRun(t, e, "a", "x", RunOptions{})
	if res.Termination.Reason != Completed {
		t.Fatalf("got %s", res.Termination)
	}
	routed := eventsOf(t, journalOf(t, e, res.RunID), journal.ModelRouted)
	if len(routed) != 2 {
		t.Fatalf("%d model_routed events, want one per model call", len(routed))
	}
	var d journal.ModelRoutedData
	if err := routed[0].Decode(&d); err != nil {
		t.Fatal(err)
	}
	if d.Model != "model.good" || d.Router != "router.r" || len(d.Rejected) != 1 || d.Rejected[0].Model != "model.cheap" || !strings.Contains(d.Rejected[0].Reason, "tools") {
		t.Errorf("model_routed %s", routed[0].Data)
	}
}

// flakyAgentHCL is agentHCL with a command tool "flaky" that always fails
// (exit 3) under recovery.r, beside the calculator, both allowed; rest
// declares recovery.r.
func flakyAgentHCL(rest string) string {
	hcl := `
tool "flaky" {
  description = "always fails"
  parameters = {
    type       = "object"
    properties = { expression = { type = "string" } }
    required   = ["expression"]
  }
  command {
    argv = ["sh", "-c", "exit 3"]
  }
  effect   = "none"
  recovery = recovery.r
}
policy "rules" {
  rules {
    allow = ["calculator", "flaky"]
  }
}
` + rest
	return strings.Replace(agentHCL(hcl, "policies = [policy.rules]"), "tools    = [tool.calculator]", "tools    = [tool.calculator, tool.flaky]", 1)
}

func TestRecoveryChainRetriesThenFallsBackThroughTheGate(t *testing.T) {
	hcl := flakyAgentHCL(`
recovery "r" {
  retry {
    max_attempts    = 2
    initial_backoff = "1ms"
    max_backoff     = "1ms"
    on              = ["error"]
  }
  fallback {
    tools = [tool.calculator]
  }
}
`)
	p, dir := fixture{"main.hcl": hcl, "script.json": `{"turns":[]}`}.compile(t)
	m := scriptedModel(t, `{"turns":[{"tool_calls":[{"id":"c1","name":"flaky","arguments":{"expression":"6*7"}}]},{"content":"42"}]}`)
	e, _ := newEngine(t, p, dir, withModel(m))
	res := mustRun(t, e, "a", "x", RunOptions{})
	if res.Termination.Reason != Completed {
		t.Fatalf("got %s", res.Termination)
	}
	if got := lastToolMessages(m.Requests()[1])[0].Content; got != "[fallback calculator] 42" {
		t.Errorf("observation %q", got)
	}
	evs := journalOf(t, e, res.RunID)
	var strategies []string
	for _, ev := range eventsOf(t, evs, journal.RecoveryTriggered) {
		var d journal.RecoveryTriggeredData
		if err := ev.Decode(&d); err != nil {
			t.Fatal(err)
		}
		strategies = append(strategies, d.Strategy)
	}
	if !strings.Contains(strings.Join(strategies, " "), "retry") || !strings.Contains(strings.Join(strategies, " "), "fallback") {
		t.Errorf("recovery_triggered strategies %v", strategies)
	}
	// The fallback call was gated: a policy_evaluated names calculator.
	found := false
	for _, ev := range eventsOf(t, evs, journal.PolicyEvaluated) {
		found = found || strings.Contains(string(ev.Data), `"tool":"calculator"`)
	}
	if !found {
		t.Error("no gate decision for the fallback call")
	}
}

// approver answers every request the same way and remembers them.
type approver struct {
	yes  bool
	seen []policy.Request
}

func (a *approver) Approve(_ context.Context, req policy.Request) (policy.ApprovalRecord, error) {
	a.seen = append(a.seen, req)
	return policy.ApprovalRecord{ID: "r1", Approved: a.yes, By: "tester", Via: "test"}, nil
}

func TestAskGoesToAPerson(t *testing.T) {
	ask := `
policy "rules" {
  rules {
    ask = ["calculator"]
  }
}
`
	p, dir := fixture{"main.hcl": agentHCL(ask, "policies = [policy.rules]"), "script.json": `{"turns":[]}`}.compile(t)
	for _, tc := range []struct {
		name string
		ap   *approver
		want string
	}{
		{"approved", &approver{yes: true}, "42"},
		{"rejected", &approver{yes: false}, "[not approved: denied_by_approver]"},
		{"nobody to ask", nil, "[not approved: no_approver] needs a person's approval"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := scriptedModel(t, `{"turns":[{"tool_calls":[{"id":"c1","name":"calculator","arguments":{"expression":"6*7"}}]},{"content":"done"}]}`)
			e, _ := newEngine(t, p, dir, func(o *Options) {
				withModel(m)(o)
				if tc.ap != nil {
					o.Approver = tc.ap
				}
			})
			res := mustRun(t, e, "a", "x", RunOptions{})
			if res.Termination.Reason != Completed {
				t.Fatalf("got %s", res.Termination)
			}
			if got := lastToolMessages(m.Requests()[1])[0].Content; !strings.HasPrefix(got, tc.want) {
				t.Errorf("observation %q, want %q", got, tc.want)
			}
			evs := journalOf(t, e, res.RunID)
			if len(eventsOf(t, evs, journal.ApprovalRequested)) != 1 || len(eventsOf(t, evs, journal.ApprovalDecided)) != 1 {
				t.Errorf("journal %v", eventTypes(evs))
			}
			if tc.ap != nil && (len(tc.ap.seen) != 1 || tc.ap.seen[0].Action.Tool != "calculator" || tc.ap.seen[0].RunID != res.RunID) {
				t.Errorf("approver saw %+v", tc.ap.seen)
			}
		})
	}
}

func TestAPIKeyNeverReachesJournalOrObserver(t *testing.T) {
	const key = "sk-test-5f8e2a91c4"
	srv := fakeserver.New(t, fakeserver.WithReplies(fakeserver.Text("your key is "+key)))
	hcl := strings.Replace(openaiHCL(srv.URL()), `name     = "fake-model"`, `name     = "fake-model"
  api_key_env = "FAKE_KEY"`, 1)
	p, dir := fixture{"main.hcl": hcl}.compile(t)
	e, rec := newEngine(t, p, dir, func(o *Options) {
		o.LookupEnv = func(n string) (string, bool) {
			if n == "FAKE_KEY" {
				return key, true
			}
			return "", false
		}
	})
	res := mustRun(t, e, "a", "what is my key?", RunOptions{})
	if res.Termination.Reason != Completed {
		t.Fatalf("got %s", res.Termination)
	}
	if got := srv.Requests()[0].Header.Get("Authorization"); got != "Bearer "+key {
		t.Fatalf("the key was not sent: %q", got)
	}
	if err := e.Sync(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(journal.Path(e.StateDir(), res.RunID))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), key) {
		t.Error("the API key is in the journal")
	}
	for _, ev := range rec.events {
		if strings.Contains(string(ev.Data), key) || strings.Contains(ev.Delta, key) {
			t.Errorf("the API key reached the observer in %s", ev.Type)
		}
	}
	if !strings.Contains(string(b), "[redacted]") {
		t.Error("expected the echoed key to be redacted")
	}
}

func TestToolTimeoutAndCircuitBreaker(t *testing.T) {
	hcl := `
tool "slow" {
  description = "never answers in time"
  command {
    argv = ["sleep", "30"]
  }
  effect = "read"
  circuit_breaker {
    failure_threshold   = 1
    recovery_timeout    = "1h"
    half_open_max_calls = 1
  }
}
policy "rules" {
  rules {
    allow = ["slow", "calculator"]
  }
}
`
	hcl = strings.Replace(agentHCL(hcl, "policies = [policy.rules]\nloop {\n tool_timeout = \"100ms\"\n}"), "tools    = [tool.calculator]", "tools    = [tool.calculator, tool.slow]", 1)
	p, dir := fixture{"main.hcl": hcl, "script.json": `{"turns":[]}`}.compile(t)
	m := scriptedModel(t, `{"turns":[
		{"tool_calls":[{"id":"c1","name":"slow","arguments":{}}]},
		{"tool_calls":[{"id":"c2","name":"slow","arguments":{}}]},
		{"content":"gave up"}]}`)
	e, _ := newEngine(t, p, dir, withModel(m))
	res := mustRun(t, e, "a", "x", RunOptions{})
	if res.Termination.Reason != Completed || res.Answer != "gave up" {
		t.Fatalf("got %s %q", res.Termination, res.Answer)
	}
	reqs := m.Requests()
	if got := lastToolMessages(reqs[1])[0].Content; !strings.HasPrefix(got, "[tool failed: timeout]") {
		t.Errorf("first call: %q", got)
	}
	if got := lastToolMessages(reqs[2]); !strings.HasPrefix(got[len(got)-1].Content, "[tool failed: circuit_open]") {
		t.Errorf("second call: %q", got[len(got)-1].Content)
	}
}

func TestDeferredBaseURLIsResolvedAtRunTime(t *testing.T) {
	srv := fakeserver.New(t, fakeserver.WithReplies(fakeserver.Text("hi")))
	hcl := strings.Replace(openaiHCL(srv.URL()), `base_url = "`+srv.URL()+`"`, `base_url = env("FAKE_BASE")`, 1)
	p, dir := fixture{"main.hcl": hcl}.compile(t)
	if m := p.Model("model.m"); m.BaseURL.Deferred == nil {
		t.Fatalf("base_url was not deferred: %+v", m.BaseURL)
	}
	e, _ := newEngine(t, p, dir, func(o *Options) {
		o.LookupEnv = func(n string) (string, bool) {
			if n == "FAKE_BASE" {
				return srv.URL(), true
			}
			return "", false
		}
	})
	res := mustRun(t, e, "a", "x", RunOptions{})
	if res.Termination.Reason != Completed || res.Answer != "hi" || len(srv.Requests()) != 1 {
		t.Fatalf("got %s %q", res.Termination, res.Answer)
	}
}
