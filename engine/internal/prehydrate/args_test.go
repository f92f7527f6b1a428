package prehydrate

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/symbi-dev/symbi/stdlib"
)

func TestArguments(t *testing.T) {
	tests := []struct {
		schema string
		ref    Ref
		want   string
	}{
		{"", Ref{Kind: "url", Value: "https://x"}, `{"url":"https://x"}`},
		{"", Ref{Kind: "file", Value: "a.md"}, `{"path":"a.md"}`},
		{"", Ref{Kind: "ticket", Value: "JIRA-1"}, `{"reference":"JIRA-1"}`},
		{`{"type":"object","properties":{"ticket":{"type":"string"}}}`, Ref{Kind: "ticket", Value: "JIRA-1"}, `{"ticket":"JIRA-1"}`},
		{`{"type":"object","properties":{"key":{"type":"string"},"verbose":{"type":"boolean"}}}`, Ref{Kind: "ticket", Value: "JIRA-1"}, `{"key":"JIRA-1"}`},
		{`{"type":"object","properties":{"target":{"type":"string"},"depth":{"type":"integer"}},"required":["target"]}`, Ref{Kind: "url", Value: "u"}, `{"target":"u"}`},
		{`{"type":"object","properties":{"location":{"type":"string"}}}`, Ref{Kind: "file", Value: "f"}, `{"location":"f"}`},
	}
	for _, tt := range tests {
		got := string(Arguments(json.RawMessage(tt.schema), tt.ref))
		if got != tt.want {
			t.Errorf("Arguments(%s, %v) = %s, want %s", tt.schema, tt.ref, got, tt.want)
		}
	}
}

func TestFit(t *testing.T) {
	long := strings.Repeat("word ", 400)
	for _, limit := range []int{20, 50, 200} {
		got := Fit(long, limit)
		if n := stdlib.EstimateTokens(got); n > limit {
			t.Errorf("limit %d: %d tokens", limit, n)
		}
		if !strings.HasSuffix(got, "max_context_tokens]") {
			t.Errorf("limit %d: the cut is not marked", limit)
		}
	}
	if got := Fit("short", 100); got != "short" {
		t.Errorf("a text that fits was changed to %q", got)
	}
	if got := Fit(long, 1); got != "" {
		t.Errorf("limit 1 kept %q", got)
	}
}
