package prehydrate

import (
	"fmt"
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFind(t *testing.T) {
	all := map[string]string{"url": "tool.fetch", "file": "tool.read_file", "ticket": "tool.jira"}
	patterns := map[string]*regexp.Regexp{
		"ticket": regexp.MustCompile(`JIRA-[0-9]+`),
		"pr":     regexp.MustCompile(`PR #([0-9]+)`), // no resolver: ignored
	}
	tests := []struct {
		name      string
		input     string
		resolvers map[string]string
		limit     int
		want      []string
	}{
		{
			name:  "urls, paths and patterns in input order",
			input: "Read ./docs/spec.md and https://example.com/a/b?x=1. Then fix JIRA-42 (see notes.txt), e.g. quickly, per PR #7.",
			want:  []string{"file:./docs/spec.md", "url:https://example.com/a/b?x=1", "ticket:JIRA-42", "file:notes.txt"},
		},
		{
			name:  "a url's path is not a file",
			input: "See https://example.com/docs/index.html",
			want:  []string{"url:https://example.com/docs/index.html"},
		},
		{
			name:      "no url resolver: urls are neither urls nor files",
			input:     "See https://example.com/x.html and main.go",
			resolvers: map[string]string{"file": "tool.read_file"},
			want:      []string{"file:main.go"},
		},
		{
			name:  "duplicates dropped, limit applied",
			input: "JIRA-1 JIRA-1 JIRA-2 JIRA-3",
			limit: 2,
			want:  []string{"ticket:JIRA-1", "ticket:JIRA-2"},
		},
		{
			name:  "absolute and home paths, sentence punctuation trimmed",
			input: "Compare /etc/hosts with ~/notes/todo.",
			want:  []string{"file:/etc/hosts", "file:~/notes/todo"},
		},
		{
			name:  "plain prose has no references",
			input: "What is 6 * 7? Answer in one sentence, i.e. briefly.",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := tt.resolvers
			if res == nil {
				res = all
			}
			var got []string
			for _, r := range Find(tt.input, res, patterns, tt.limit) {
				got = append(got, fmt.Sprintf("%s:%s", r.Kind, r.Value))
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("references (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCaptureGroup(t *testing.T) {
	refs := Find("merge PR #17 now", map[string]string{"pr": "tool.gh"}, map[string]*regexp.Regexp{"pr": regexp.MustCompile(`PR #([0-9]+)`)}, 0)
	if len(refs) != 1 || refs[0].Value != "17" {
		t.Fatalf("refs = %+v, want the capture group 17", refs)
	}
}
