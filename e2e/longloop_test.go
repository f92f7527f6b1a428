package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	goopenai "github.com/sashabaranov/go-openai"
	"github.com/symbi-dev/symbi/journal/render"
	"github.com/symbi-dev/symbi/provider/fakeserver"
)

// TestLongLoopThroughTheCLI runs forty tool rounds through the binary, with
// text in the arguments that JSON escapes and a tool whose output a terminal
// must not interpret. Every request the server receives is go-openai's own
// encoding of that request (symbi encodes each message once and splices
// them into go-openai's body), each carrying the whole conversation so far,
// and what symbi run showed on stderr as the run went is what the journal
// it left shows (the printer draws most lines from values it was handed,
// not from the journal's JSON).
func TestLongLoopThroughTheCLI(t *testing.T) {
	t.Parallel()
	const rounds = 40
	var replies []fakeserver.Reply
	for i := range rounds {
		id := fmt.Sprintf("call_%d", i)
		call := fakeserver.ToolCall{ID: id, Name: "calculator", Arguments: fmt.Sprintf(`{"expression": "%d+1"}`, i)}
		switch {
		case i%10 == 3:
			call = fakeserver.ToolCall{ID: id, Name: "noise", Arguments: `{}`}
		case i%3 == 0:
			call = fakeserver.ToolCall{ID: id, Name: "note", Arguments: fmt.Sprintf(`{"text": "<&> \u2028 \u00e9 %d", "n": [1, 2.50, {"k": null}]}`, i)}
		}
		replies = append(replies, fakeserver.Reply{ToolCalls: []fakeserver.ToolCall{call}})
	}
	replies = append(replies, fakeserver.Text("The answer is <42> & done."))
	srv := fakeserver.New(t, fakeserver.WithReplies(replies...))
	state := filepath.Join(t.TempDir(), "state")
	r := symbi(t, call{dir: fixture(t, "longloop"), timeout: time.Minute},
		"run", "--agent", "a", "--state-dir", state, "--var", "base_url="+srv.URL(), ".", "Compute <&>.")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r)
	}

	reqs := srv.Requests()
	if len(reqs) != rounds+1 {
		t.Fatalf("%d requests, want %d", len(reqs), rounds+1)
	}
	var prev []goopenai.ChatCompletionMessage
	for i, req := range reqs {
		var chat goopenai.ChatCompletionRequest
		if err := json.Unmarshal(req.Body, &chat); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		want, err := json.Marshal(chat)
		if err != nil {
			t.Fatal(err)
		}
		// The encoding writes a byte that is not UTF-8 (the noise tool's)
		// as \ufffd, which decodes to the character itself.
		if got := bytes.ReplaceAll(req.Body, []byte(`\ufffd`), []byte("\ufffd")); !bytes.Equal(got, want) {
			t.Fatalf("request %d is not go-openai's encoding of itself\n got: %s\nwant: %s", i, req.Body, want)
		}
		if n := len(chat.Messages); n != 2+2*i {
			t.Fatalf("request %d carries %d messages, want %d", i, n, 2+2*i)
		}
		if i > 0 && !reflect.DeepEqual(chat.Messages[:len(prev)], prev) {
			t.Fatalf("request %d does not continue the conversation of request %d", i, i-1)
		}
		prev = chat.Messages
	}

	var shown []string
	for _, ev := range readJournal(t, state, onlyRun(t, state)) {
		shown = append(shown, render.Live(ev, 0)...)
	}
	lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
	if len(lines) < len(shown) {
		t.Fatalf("stderr has %d lines, the journal shows %d\n%s", len(lines), len(shown), r.stderr)
	}
	for i, want := range shown {
		if lines[i] != want {
			t.Fatalf("stderr line %d is %q, the journal shows %q", i+1, lines[i], want)
		}
	}
	if !strings.Contains(r.stderr, `← noise: a\x1b[2J`) {
		t.Errorf("the tool's output is not shown escaped:\n%s", r.stderr)
	}
}
