package e2e

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/symbi-dev/symbi/journal"
	"github.com/symbi-dev/symbi/provider/fakeserver"
)

// One secret per side door (issue #11, item 6), each distinctive and
// holding the bytes URL escaping changes ("/", "=", "+"), so a leak names
// its path and its encoding.
const (
	sideDoorKey       = "sk-hostile-KEY/4b1e=9f07c2"   // the model's API key, SYMBI_E2E_KEY
	sideDoorDeadToken = "tok-hostile-DEAD/9e2c=71a5b3" // the flaky tool's token, SYMBI_E2E_DEAD_TOKEN
	sideDoorEchoToken = "tok/hostile+ECHO=5d3a8c1f"    // the echo tool's token, SYMBI_E2E_ECHO_TOKEN
	sideDoorToolToken = "tok-hostile-TOOL/0f6b=2d94e7" // the reveal tool's token, SYMBI_E2E_TOOL_TOKEN
)

// sideDoorRun is one run of testdata/e2e/hostile_secrets against a fake
// model, with every secret in the environment.
type sideDoorRun struct {
	model   *fakeserver.Server
	echoURL string
	input   string
	json    bool
}

// sideDoorResult is what a sideDoorRun left: where symbi wrote what (stdout,
// stderr, every file under the state directory, `runs show`), and the
// token the reveal tool received, if it ran.
type sideDoorResult struct {
	outputs map[string]string
	state   string
	run     result
	proof   string
}

func (h sideDoorRun) run(t *testing.T) sideDoorResult {
	t.Helper()
	dir := fixture(t, "hostile_secrets")
	state := filepath.Join(t.TempDir(), "state")
	proof := t.TempDir()
	echoURL := h.echoURL
	if echoURL == "" {
		echoURL = "http://127.0.0.1:1/unused"
	}
	c := call{dir: dir, env: []string{
		"SYMBI_E2E_KEY=" + sideDoorKey,
		"SYMBI_E2E_DEAD_TOKEN=" + sideDoorDeadToken,
		"SYMBI_E2E_ECHO_TOKEN=" + sideDoorEchoToken,
		"SYMBI_E2E_TOOL_TOKEN=" + sideDoorToolToken,
	}}
	args := []string{"run", "--state-dir", state, "--var", "base_url=" + h.model.URL(), "--var", "echo_url=" + echoURL, "--var", "proof_dir=" + proof}
	if h.json {
		args = append(args, "--json")
	}
	input := h.input
	if input == "" {
		input = "go"
	}
	r := symbi(t, c, append(args, ".", input)...)
	outputs := map[string]string{"run stdout": r.stdout, "run stderr": r.stderr}
	show := symbi(t, c, "runs", "show", "--state-dir", state, "latest")
	outputs["runs show stdout"] = show.stdout
	outputs["runs show stderr"] = show.stderr
	filepath.WalkDir(state, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			b, _ := os.ReadFile(path)
			rel, _ := filepath.Rel(state, path)
			outputs["state file "+rel] = string(b)
		}
		return nil
	})
	b, _ := os.ReadFile(filepath.Join(proof, "token"))
	return sideDoorResult{outputs: outputs, state: state, run: r, proof: string(b)}
}

// secretSpellings are the spellings of secret an echo may use, by name: as it
// is, URL query and path escaped (upper and lower hex), JSON \u escaped
// (and that escaped again, as a JSON string holding JSON shows it), and
// base64 — alone, in both alphabets, and inside a longer value at the two
// other alignments (only the characters the secret alone decides).
func secretSpellings(what, secret string) map[string]string {
	jsonEscaped := ""
	for _, r := range secret {
		jsonEscaped += fmt.Sprintf(`\u%04x`, r)
	}
	std := base64.RawStdEncoding.EncodeToString([]byte(secret))
	urlb := base64.RawURLEncoding.EncodeToString([]byte(secret))
	forms := map[string]string{
		what:                              secret,
		what + " query-escaped":           url.QueryEscape(secret),
		what + " path-escaped":            url.PathEscape(secret),
		what + " query-escaped lower hex": lowerHexEscapes(url.QueryEscape(secret)),
		what + " JSON-escaped":            jsonEscaped,
		what + " JSON-escaped twice":      strings.ReplaceAll(jsonEscaped, `\`, `\\`),
		what + " base64":                  std[:len(std)-1],
		what + " base64url":               urlb[:len(urlb)-1],
	}
	for _, prefix := range []string{"u", "us"} {
		e := base64.StdEncoding.EncodeToString([]byte(prefix + secret))
		forms[fmt.Sprintf("%s base64 after %d bytes", what, len(prefix))] = e[4 : len(e)-4]
	}
	return forms
}

func lowerHexEscapes(s string) string {
	b := []byte(s)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' {
			b[i+1], b[i+2] = lowerHexDigit(b[i+1]), lowerHexDigit(b[i+2])
		}
	}
	return string(b)
}

func lowerHexDigit(c byte) byte {
	if c >= 'A' && c <= 'F' {
		return c + 'a' - 'A'
	}
	return c
}

// modelReceived is what the fake model received, for assertNoSecrets: each
// request's raw body and its messages as the model reads them.
func modelReceived(srv *fakeserver.Server) map[string]string {
	out := map[string]string{}
	for i, req := range srv.Requests() {
		out[fmt.Sprintf("model request %d body", i)] = string(req.Body)
		for j, m := range req.Chat.Messages {
			text := m.Content
			for _, c := range m.ToolCalls {
				text += "\n" + c.Function.Arguments
			}
			out[fmt.Sprintf("model request %d message %d (%s)", i, j, m.Role)] = text
		}
	}
	return out
}

// TestHostileSecretInDeadLetter has the model call a failing tool with the
// tool's own token in its arguments, and the tool quote the token on
// stderr: the failure is shelved in the dead-letter file, which must hold
// neither.
func TestHostileSecretInDeadLetter(t *testing.T) {
	t.Parallel()
	model := fakeserver.New(t, fakeserver.WithHandler(func(n int, req fakeserver.Request) fakeserver.Reply {
		msgs := req.Chat.Messages
		if msgs[len(msgs)-1].Role != "tool" {
			return fakeserver.Reply{ToolCalls: []fakeserver.ToolCall{{ID: "call_flaky", Name: "flaky", Arguments: `{"token":"` + sideDoorDeadToken + `"}`}}}
		}
		return fakeserver.Text("shelved")
	}))
	h := sideDoorRun{model: model}.run(t)
	if h.run.code != 0 {
		t.Fatalf("run:\n%s", h.run)
	}
	dead, err := os.ReadFile(filepath.Join(h.state, "dead_letter.jsonl"))
	if err != nil {
		t.Fatalf("no dead letter: %v\n%s", err, h.run)
	}
	var line struct {
		Tool      string          `json:"tool"`
		Arguments json.RawMessage `json:"arguments"`
		Error     string          `json:"error"`
	}
	if err := json.Unmarshal(dead, &line); err != nil {
		t.Fatalf("the dead letter is not one JSON line: %v\n%s", err, dead)
	}
	// Not vacuous: the failure and the arguments are there, secrets out.
	if line.Tool != "flaky" || !strings.Contains(line.Error, "refused: token [redacted]") || string(line.Arguments) != `{"token":"[redacted]"}` {
		t.Errorf("dead letter: %s", dead)
	}
	assertNoSecrets(t, h.outputs, secretSpellings("the dead-letter token", sideDoorDeadToken))
}

// TestHostileSecretEchoedEncoded calls an http tool whose service answers
// with the token it was sent, URL-encoded (%2F, %3D, either hex case),
// JSON-escaped and base64-encoded (alone and inside a Basic credential):
// the journal, stderr, --json, `runs show` and the model's next request
// must show none of them.
func TestHostileSecretEchoedEncoded(t *testing.T) {
	t.Parallel()
	var got headerLog
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		got.add(tok)
		escaped := ""
		for _, c := range tok {
			escaped += fmt.Sprintf(`\u%04X`, c)
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"query":%q,"path":%q,"lower":%q,"escaped":"%s","b64":%q,"b64url":%q,"basic":%q}`,
			url.QueryEscape(tok), url.PathEscape(tok), lowerHexEscapes(url.QueryEscape(tok)), escaped,
			base64.StdEncoding.EncodeToString([]byte(tok)), base64.RawURLEncoding.EncodeToString([]byte(tok)),
			base64.StdEncoding.EncodeToString([]byte("svc:"+tok)))
	}))
	t.Cleanup(echo.Close)
	for _, asJSON := range []bool{false, true} {
		t.Run(fmt.Sprintf("json=%v", asJSON), func(t *testing.T) {
			model := fakeserver.New(t, fakeserver.WithHandler(func(n int, req fakeserver.Request) fakeserver.Reply {
				msgs := req.Chat.Messages
				if msgs[len(msgs)-1].Role != "tool" {
					return fakeserver.Reply{ToolCalls: []fakeserver.ToolCall{{ID: "call_echo", Name: "echo", Arguments: `{"q":"ada"}`}}}
				}
				return fakeserver.Text("echoed")
			}))
			h := sideDoorRun{model: model, echoURL: echo.URL, json: asJSON}.run(t)
			if h.run.code != 0 {
				t.Fatalf("run:\n%s", h.run)
			}
			outputs := h.outputs
			// Not vacuous: the service got the token, and its answer, less
			// the token, reached the journal and the model. Of the Basic
			// credential, "svc:" is left (c3ZjO): the characters after it
			// carry the token's bits.
			evs := readJournal(t, h.state, onlyRun(t, h.state))
			results := eventsOf[journal.ToolResultData](t, evs, journal.ToolResult)
			if len(results) != 1 || !strings.Contains(results[0].Output, `"query":"[redacted]"`) || !strings.Contains(results[0].Output, `"basic":"c3ZjO[redacted]"`) {
				t.Errorf("tool results: %+v", results)
			}
			for k, v := range modelReceived(model) {
				outputs[k] = v
			}
			if !strings.Contains(outputs["model request 1 message 3 (tool)"], `"lower":"[redacted]"`) {
				t.Errorf("the model did not get the service's answer, redacted: %q", outputs["model request 1 message 3 (tool)"])
			}
			assertNoSecrets(t, outputs, secretSpellings("the echoed token", sideDoorEchoToken))
		})
	}
	for _, tok := range got.all() {
		if tok != sideDoorEchoToken {
			t.Errorf("the service got %q, want the token from SYMBI_E2E_ECHO_TOKEN", tok)
		}
	}
	if n := len(got.all()); n != 2 {
		t.Errorf("the service was called %d times, want once per run", n)
	}
}

// TestHostileSecretInInput gives a run an input that quotes the model's
// API key: the started event (journal, stderr, --json) and the request to
// the model must show it as [redacted] — it was registered only when the
// model was first built, after the started line was written.
func TestHostileSecretInInput(t *testing.T) {
	t.Parallel()
	for _, asJSON := range []bool{false, true} {
		t.Run(fmt.Sprintf("json=%v", asJSON), func(t *testing.T) {
			model := fakeserver.New(t, fakeserver.WithReplies(fakeserver.Text("noted")))
			input := "my key is " + sideDoorKey + ", keep it safe"
			h := sideDoorRun{model: model, input: input, json: asJSON}.run(t)
			if h.run.code != 0 {
				t.Fatalf("run:\n%s", h.run)
			}
			outputs := h.outputs
			evs := readJournal(t, h.state, onlyRun(t, h.state))
			started := eventsOf[journal.StartedData](t, evs, journal.Started)
			if len(started) != 1 || started[0].Input != "my key is [redacted], keep it safe" {
				t.Errorf("started: %+v", started)
			}
			reqs := model.Requests()
			if len(reqs) != 1 || reqs[0].Header.Get("Authorization") != "Bearer "+sideDoorKey {
				t.Fatalf("the model got %d requests; the key must still reach it in its header", len(reqs))
			}
			for k, v := range modelReceived(model) {
				outputs[k] = v
			}
			if !strings.Contains(outputs["model request 0 message 1 (user)"], "my key is [redacted]") {
				t.Errorf("the model's user message: %q", outputs["model request 0 message 1 (user)"])
			}
			assertNoSecrets(t, outputs, secretSpellings("the API key", sideDoorKey))
		})
	}
}

// TestHostileSecretInToolOutputNotSentToModel has a tool print its token,
// as it is and base64-encoded: the model provider must get the tool's
// result with both redacted.
func TestHostileSecretInToolOutputNotSentToModel(t *testing.T) {
	t.Parallel()
	model := fakeserver.New(t, fakeserver.WithHandler(func(n int, req fakeserver.Request) fakeserver.Reply {
		msgs := req.Chat.Messages
		if msgs[len(msgs)-1].Role != "tool" {
			return fakeserver.Reply{ToolCalls: []fakeserver.ToolCall{{ID: "call_reveal", Name: "reveal", Arguments: `{"note":"hi"}`}}}
		}
		return fakeserver.Text("seen")
	}))
	h := sideDoorRun{model: model}.run(t)
	if h.run.code != 0 {
		t.Fatalf("run:\n%s", h.run)
	}
	if h.proof != sideDoorToolToken {
		t.Fatalf("the reveal tool got token %q, want the one from SYMBI_E2E_TOOL_TOKEN", h.proof)
	}
	outputs := h.outputs
	reqs := modelReceived(model)
	if got := reqs["model request 1 message 3 (tool)"]; got != "token [redacted]\nencoded [redacted]\n" {
		t.Errorf("the model got the tool's result as %q", got)
	}
	for k, v := range reqs {
		outputs[k] = v
	}
	assertNoSecrets(t, outputs, secretSpellings("the tool's token", sideDoorToolToken))
}
