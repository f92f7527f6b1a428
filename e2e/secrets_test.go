package e2e

import (
	"encoding/json"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/symbi-dev/symbi/journal"
	"github.com/symbi-dev/symbi/provider/fakeserver"
)

// The secrets, distinctive enough that finding one anywhere is a leak.
const (
	secretKey   = "sk-e2e-KEY-7f3c9a1b5d"    // the model's API key, SYMBI_E2E_KEY
	secretToken = "tok-e2e-TOKEN-2b8e4d6f0a" // the tools' token, SYMBI_E2E_TOKEN
	secretPin   = "pin-e2e-PIN-93c1e07d"     // a sensitive variable, SYMBI_VAR_pin
)

// headerLog records one header of every request a test server receives.
type headerLog struct {
	mu     sync.Mutex
	values []string
}

func (l *headerLog) add(v string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.values = append(l.values, v)
}

func (l *headerLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.values...)
}

// lookupServer is the http tool's endpoint: it answers with the
// Authorization header it received, as a careless service might.
func lookupServer(t *testing.T) (*httptest.Server, *headerLog) {
	var log headerLog
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		auth := r.Header.Get("Authorization")
		log.add(auth)
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]string{"name": "ada", "you_sent": auth})
	}))
	t.Cleanup(srv.Close)
	return srv, &log
}

// echoingModel calls both tools, then answers with the Authorization
// header it was sent, split into the given chunks: a model (or a proxy)
// that echoes the key.
func echoingModel(t *testing.T, split func(auth string) []string) *fakeserver.Server {
	return fakeserver.New(t, fakeserver.WithHandler(func(n int, req fakeserver.Request) fakeserver.Reply {
		msgs := req.Chat.Messages
		if len(msgs) == 0 || msgs[len(msgs)-1].Role != "tool" {
			return fakeserver.Reply{ToolCalls: []fakeserver.ToolCall{
				{ID: "call_token", Name: "show_token", Arguments: `{"note":"hi"}`},
				{ID: "call_lookup", Name: "lookup", Arguments: `{"name":"ada"}`},
			}}
		}
		return fakeserver.Reply{Chunks: split(req.Header.Get("Authorization"))}
	}))
}

// TestSecretsStayOut runs a configuration whose model key and tool token
// are delivered and echoed back (by the model, the command tool and the
// http service), and which declares a sensitive variable, and looks for each
// secret in every plan, output, journal and state file symbi produces.
func TestSecretsStayOut(t *testing.T) {
	t.Parallel()
	model := echoingModel(t, func(auth string) []string { return []string{"done; you sent ", auth} })
	lookup, lookupAuth := lookupServer(t)
	dir := fixture(t, "secrets")
	state := filepath.Join(t.TempDir(), "state")
	proof := t.TempDir()
	c := call{dir: dir, env: []string{
		"SYMBI_E2E_KEY=" + secretKey,
		"SYMBI_E2E_TOKEN=" + secretToken,
		"SYMBI_VAR_pin=" + secretPin,
	}}
	vars := []string{"--var", "base_url=" + model.URL(), "--var", "lookup_url=" + lookup.URL, "--var", "proof_dir=" + proof}
	with := func(args ...string) []string { return append(args, vars...) }

	outputs := map[string]string{} // where → what symbi wrote there
	record := func(name string, r result) {
		outputs[name+" stdout"] = r.stdout
		outputs[name+" stderr"] = r.stderr
	}

	r := symbi(t, c, with("validate", ".")...)
	if r.code != 0 {
		t.Fatalf("validate:\n%s", r)
	}
	record("validate", r)
	for _, args := range [][]string{{"plan", "-json", "."}, {"plan", "."}} {
		r := symbi(t, c, with(args...)...)
		if r.code != 0 {
			t.Fatalf("%v:\n%s", args, r)
		}
		record(strings.Join(args, " "), r)
	}
	planFile := filepath.Join(t.TempDir(), "plan.json")
	if r := symbi(t, c, with("plan", "-out", planFile, ".")...); r.code != 0 {
		t.Fatalf("plan -out:\n%s", r)
	}

	r = symbi(t, c, with("run", "--json", "--state-dir", state, ".", "go")...)
	record("run --json", r)
	if r.code != 0 {
		t.Fatalf("run --json:\n%s", r)
	}
	r = symbi(t, c, with("run", "--state-dir", state, ".", "go")...)
	record("run", r)
	if r.code != 0 {
		t.Fatalf("run:\n%s", r)
	}
	// The saved plan runs too, and must not need the secrets in it.
	r = symbi(t, c, "run", "--state-dir", state, planFile, "go")
	record("run plan.json", r)
	if r.code != 0 {
		t.Fatalf("run plan.json:\n%s", r)
	}

	for _, args := range [][]string{{"runs"}, {"runs", "--json"}, {"runs", "show", "latest"}, {"runs", "show", "--json", "latest"}} {
		r := symbi(t, c, append(args, "--state-dir", state)...)
		if r.code != 0 {
			t.Fatalf("%v:\n%s", args, r)
		}
		record(strings.Join(args, " "), r)
	}

	// Not vacuous: every secret reached the one it was meant for.
	reqs := model.Requests()
	if len(reqs) < 6 {
		t.Errorf("the fake model got %d requests, want 2 per run", len(reqs))
	}
	for i, req := range reqs {
		if got := req.Header.Get("Authorization"); got != "Bearer "+secretKey {
			t.Errorf("model request %d: Authorization %q, want the key from SYMBI_E2E_KEY", i, got)
		}
	}
	auths := lookupAuth.all()
	if len(auths) != 3 {
		t.Errorf("the http tool was called %d times, want once per run", len(auths))
	}
	for _, a := range auths {
		if a != "Bearer "+secretToken {
			t.Errorf("the http tool sent Authorization %q, want the token from SYMBI_E2E_TOKEN", a)
		}
	}
	if b, err := os.ReadFile(filepath.Join(proof, "token")); err != nil || string(b) != secretToken {
		t.Errorf("the command tool's token: %q, %v; want %q", b, err, secretToken)
	}
	if !strings.Contains(outputs["plan -json . stdout"], `"sensitive": true`) {
		t.Errorf("the plan does not mark var.pin sensitive:\n%s", outputs["plan -json . stdout"])
	}
	if !strings.Contains(outputs["run stdout"], "done; you sent") {
		t.Errorf("the answer did not reach stdout:\n%s", outputs["run stdout"])
	}

	// Now look everywhere.
	if b, err := os.ReadFile(planFile); err == nil {
		outputs["plan -out file"] = string(b)
	} else {
		t.Fatal(err)
	}
	files := 0
	filepath.WalkDir(state, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			b, _ := os.ReadFile(path)
			rel, _ := filepath.Rel(state, path)
			outputs["state file "+rel] = string(b)
			files++
		}
		return nil
	})
	runs, err := journal.ListRuns(state)
	if err != nil {
		t.Fatal(err)
	}
	for _, run := range runs {
		evs := readJournal(t, state, run.ID)
		assertGated(t, evs)
		if d := terminated(t, evs); d.Reason != "completed" {
			t.Errorf("run %s: terminated %q, want completed", run.ID, d.Reason)
		}
	}
	if files < 6 {
		t.Errorf("%d files under the state dir; want a journal and a plan per run", files)
	}
	assertNoSecrets(t, outputs, map[string]string{
		"the model's API key":    secretKey,
		"the tools' token":       secretToken,
		"the sensitive variable": secretPin,
	})
}

// TestSecretSplitAcrossDeltas has the model echo its key in two streamed
// deltas, so no single delta holds the whole secret: the terminal must
// still not show it.
func TestSecretSplitAcrossDeltas(t *testing.T) {
	t.Parallel()
	model := echoingModel(t, func(auth string) []string {
		mid := len(auth) - 6
		return []string{"you sent ", auth[:mid], auth[mid:], " ok"}
	})
	lookup, _ := lookupServer(t)
	dir := fixture(t, "secrets")
	state := filepath.Join(t.TempDir(), "state")
	c := call{dir: dir, env: []string{"SYMBI_E2E_KEY=" + secretKey, "SYMBI_E2E_TOKEN=" + secretToken}}
	outputs := map[string]string{}
	for _, mode := range []string{"", "--json"} {
		args := []string{"run", "--state-dir", state, "--var", "base_url=" + model.URL(), "--var", "lookup_url=" + lookup.URL, "--var", "proof_dir=" + t.TempDir()}
		if mode != "" {
			args = append(args, mode)
		}
		r := symbi(t, c, append(args, ".", "go")...)
		if r.code != 0 {
			t.Fatalf("run %s:\n%s", mode, r)
		}
		outputs["run "+mode+" stdout"] = r.stdout
		outputs["run "+mode+" stderr"] = r.stderr
	}
	assertNoSecrets(t, outputs, map[string]string{"the model's API key": secretKey})
}

// assertNoSecrets reports every place where a secret shows.
func assertNoSecrets(t *testing.T, outputs, secrets map[string]string) {
	t.Helper()
	for where, text := range outputs {
		for what, secret := range secrets {
			if i := strings.Index(text, secret); i >= 0 {
				t.Errorf("%s shows %s: …%s…", where, what, excerpt(text, i, len(secret)))
			}
		}
	}
}

// excerpt is text around [i, i+n), on one line.
func excerpt(text string, i, n int) string {
	from, to := max(0, i-80), min(len(text), i+n+40)
	return strings.ReplaceAll(text[from:to], "\n", `\n`)
}

// TestSecretInModelURLStaysOut gives a model an env() endpoint URL with a
// secret in its path and a port where nothing listens: the run fails
// (exit 4), and neither its output nor its journal may show the URL.
func TestSecretInModelURLStaysOut(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	dir := fixture(t, "secret_url")
	state := filepath.Join(t.TempDir(), "state")
	c := call{dir: dir, env: []string{"SYMBI_E2E_BASE_URL=http://" + closed + "/v1/" + secretToken}}
	outputs := map[string]string{}
	for _, mode := range []string{"", "--json"} {
		args := []string{"run", "--state-dir", state}
		if mode != "" {
			args = append(args, mode)
		}
		r := symbi(t, c, append(args, ".", "hi")...)
		if r.code != 4 || !strings.Contains(r.stdout+r.stderr, "transport_failed") {
			t.Fatalf("run %s: want exit 4 with transport_failed\n%s", mode, r)
		}
		outputs["run "+mode+" stdout"] = r.stdout
		outputs["run "+mode+" stderr"] = r.stderr
	}
	r := symbi(t, c, "runs", "show", "--state-dir", state, "latest")
	outputs["runs show stdout"] = r.stdout
	filepath.WalkDir(state, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			b, _ := os.ReadFile(path)
			outputs["state file "+path] = string(b)
		}
		return nil
	})
	assertNoSecrets(t, outputs, map[string]string{"the secret in the model's URL": secretToken})
}

// TestEchoedKeyInProviderErrorStaysOut has the server refuse the key and
// quote it in its error, as OpenAI's "Incorrect API key provided: sk-…"
// does: the run fails with authentication_failed, and the key shows
// nowhere.
func TestEchoedKeyInProviderErrorStaysOut(t *testing.T) {
	t.Parallel()
	model := fakeserver.New(t, fakeserver.WithHandler(func(n int, req fakeserver.Request) fakeserver.Reply {
		key := strings.TrimPrefix(req.Header.Get("Authorization"), "Bearer ")
		return fakeserver.ErrorReply(401, "invalid_api_key", "Incorrect API key provided: "+key+". You can find your API key at https://example.invalid.")
	}))
	lookup, _ := lookupServer(t)
	dir := fixture(t, "secrets")
	state := filepath.Join(t.TempDir(), "state")
	c := call{dir: dir, env: []string{"SYMBI_E2E_KEY=" + secretKey, "SYMBI_E2E_TOKEN=" + secretToken}}
	outputs := map[string]string{}
	for _, mode := range []string{"", "--json"} {
		args := []string{"run", "--state-dir", state, "--var", "base_url=" + model.URL(), "--var", "lookup_url=" + lookup.URL, "--var", "proof_dir=" + t.TempDir()}
		if mode != "" {
			args = append(args, mode)
		}
		r := symbi(t, c, append(args, ".", "go")...)
		if r.code != 4 || !strings.Contains(r.stdout+r.stderr, "authentication_failed") {
			t.Fatalf("run %s: want exit 4 with authentication_failed\n%s", mode, r)
		}
		outputs["run "+mode+" stdout"] = r.stdout
		outputs["run "+mode+" stderr"] = r.stderr
	}
	filepath.WalkDir(state, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			b, _ := os.ReadFile(path)
			outputs["state file "+path] = string(b)
		}
		return nil
	})
	assertNoSecrets(t, outputs, map[string]string{"the model's API key": secretKey})
}

// TestSensitiveVariableRefused uses a sensitive variable where the plan
// would hold its value: validate, plan and run must refuse it (exit 2)
// naming the place, without showing the value, whether it is set or not.
func TestSensitiveVariableRefused(t *testing.T) {
	t.Parallel()
	dir := fixture(t, "sensitive_var")
	outputs := map[string]string{}
	for _, env := range [][]string{nil, {"SYMBI_VAR_pin=" + secretPin}} {
		for _, args := range [][]string{{"validate", "."}, {"plan", "-json", "."}, {"run", "--state-dir", t.TempDir(), ".", "hi"}} {
			if args[0] == "plan" || args[0] == "run" {
				if env == nil {
					continue // a variable without a value is another error
				}
			}
			r := symbi(t, call{dir: dir, env: env}, args...)
			name := strings.Join(args[:1], " ") + " " + strings.Join(env, " ")
			if r.code != 2 || !strings.Contains(r.stderr, "main.hcl line 19") || !strings.Contains(r.stderr, "var.pin") {
				t.Errorf("%s: want exit 2 naming main.hcl line 19 and var.pin\n%s", name, r)
			}
			outputs[name+" stdout"] = r.stdout
			outputs[name+" stderr"] = r.stderr
		}
	}
	assertNoSecrets(t, outputs, map[string]string{"the sensitive variable": secretPin})
}
