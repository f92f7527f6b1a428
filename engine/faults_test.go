package engine

import (
	"errors"
	"fmt"
	"testing"

	"github.com/symbi-dev/symbi/provider"
	"github.com/symbi-dev/symbi/provider/fakeserver"
)

// openaiHCL is an agent on an openai model served by the fake server at url,
// with short stream timeouts and two attempts per call.
func openaiHCL(url string) string {
	return fmt.Sprintf(`
model "m" {
  provider = "openai"
  name     = "fake-model"
  base_url = %q
  timeouts {
    total       = "10s"
    connect     = "2s"
    first_event = "300ms"
    idle        = "300ms"
  }
  retry {
    max_attempts = 2
    backoff      = "10ms"
    max_backoff  = "2s"
    jitter       = 0
  }
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
  model    = model.m
  tools    = [tool.calculator]
  policies = [policy.rules]
}
`, url)
}

// TestProviderFaults runs a react iteration against every fault the fake
// server can inject. Each run ends, within the model's timeouts, either in
// a recovery (the transport retry answered) or in a typed provider error;
// never a hang or a panic.
func TestProviderFaults(t *testing.T) {
	good := fakeserver.Text("fine")
	cases := []struct {
		name    string
		replies []fakeserver.Reply
		kind    provider.ErrorKind // "" = recovered
		detail  string
	}{
		{"rate limit then answer", []fakeserver.Reply{{Fault: fakeserver.FaultRateLimit, RetryAfterHeader: "0"}, good}, "", ""},
		{"rate limit twice", []fakeserver.Reply{{Fault: fakeserver.FaultRateLimit, RetryAfterHeader: "0"}, {Fault: fakeserver.FaultRateLimit, RetryAfterHeader: "0"}}, provider.RateLimited, ""},
		{"server error then answer", []fakeserver.Reply{{Fault: fakeserver.FaultServerError}, good}, "", ""},
		{"server error twice", []fakeserver.Reply{{Fault: fakeserver.FaultServerError}, {Fault: fakeserver.FaultServerError}}, provider.TransportFailed, ""},
		{"reset then answer", []fakeserver.Reply{{Fault: fakeserver.FaultReset}, good}, "", ""},
		{"reset twice", []fakeserver.Reply{{Fault: fakeserver.FaultReset}, {Fault: fakeserver.FaultReset}}, provider.TransportFailed, ""},
		{"stall before the first event", []fakeserver.Reply{{Fault: fakeserver.FaultStallBeforeFirstEvent}, {Fault: fakeserver.FaultStallBeforeFirstEvent}}, provider.Timeout, "first_event"},
		{"stall mid-stream", []fakeserver.Reply{{Chunks: []string{"a", "b"}, Fault: fakeserver.FaultStallMidStream}}, provider.Timeout, "idle"},
		{"malformed JSON", []fakeserver.Reply{{Chunks: []string{"a", "b"}, Fault: fakeserver.FaultMalformedJSON}}, provider.MalformedResponse, ""},
		{"truncated stream", []fakeserver.Reply{{Chunks: []string{"a", "b"}, Fault: fakeserver.FaultTruncated}}, provider.TransportFailed, ""},
		{"bad key", []fakeserver.Reply{fakeserver.ErrorReply(401, "invalid_api_key", "no")}, provider.AuthenticationFailed, ""},
		{"unknown model", []fakeserver.Reply{fakeserver.ErrorReply(404, "model_not_found", "no such model")}, provider.ModelUnavailable, ""},
		{"refusal", []fakeserver.Reply{{Refusal: "I cannot help with that"}}, provider.Refusal, ""},
		{"empty turn", []fakeserver.Reply{{}}, provider.EmptyResponse, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := fakeserver.New(t, fakeserver.WithReplies(tc.replies...))
			p, dir := fixture{"main.hcl": openaiHCL(srv.URL())}.compile(t)
			e, _ := newEngine(t, p, dir, nil)
			res := mustRun(t, e, "a", "hello", RunOptions{})
			if tc.kind == "" {
				if res.Termination.Reason != Completed || res.Answer != "fine" {
					t.Fatalf("want a recovery, got %s", res.Termination)
				}
				return
			}
			if res.Termination.Reason != Failed {
				t.Fatalf("want error, got %s", res.Termination)
			}
			var pe *provider.Error
			if !errors.As(res.Termination.Err, &pe) || pe.Kind != tc.kind || (tc.detail != "" && pe.Detail != tc.detail) {
				t.Fatalf("want a %s (%s) provider error, got %v", tc.kind, tc.detail, res.Termination.Err)
			}
		})
	}
}

// TestToolCallThroughTheWire runs a react loop whose tool call arrives in
// streamed fragments from the fake server.
func TestToolCallThroughTheWire(t *testing.T) {
	srv := fakeserver.New(t, fakeserver.WithReplies(
		fakeserver.Reply{ToolCalls: []fakeserver.ToolCall{{ID: "c1", Name: "calculator", Arguments: `{"expression":"6*7"}`}}},
		fakeserver.Text("it is ", "42"),
	))
	p, dir := fixture{"main.hcl": openaiHCL(srv.URL())}.compile(t)
	e, rec := newEngine(t, p, dir, nil)
	res := mustRun(t, e, "a", "what is 6*7", RunOptions{})
	if res.Termination.Reason != Completed || res.Answer != "it is 42" || rec.deltas() != "it is 42" {
		t.Fatalf("got %s %q (streamed %q)", res.Termination, res.Answer, rec.deltas())
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	msgs := reqs[1].Chat.Messages
	if last := msgs[len(msgs)-1]; last.Role != "tool" || last.Content != "42" || last.ToolCallID != "c1" {
		t.Errorf("tool message sent back: %+v", last)
	}
	if len(reqs[0].Chat.Tools) != 1 || reqs[0].Chat.Tools[0].Function.Name != "calculator" {
		t.Errorf("tools offered: %+v", reqs[0].Chat.Tools)
	}
}
