package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// README's Temporal commands, as written, against a real service: a worker
// on examples/ and a run of the quickstart on Temporal, whose answer and
// exit code are the local run's. The test fails when README stops giving
// these commands.
const (
	readmeWorker = "bin/symbi worker examples/"
	readmeRun    = "bin/symbi run --temporal examples/quickstart.hcl"
)

func TestTemporalReadmeCommands(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"go build -o bin/ ./cmd/...", readmeWorker, readmeRun} {
		if !strings.Contains(string(readme), c) {
			t.Errorf("README.md no longer gives %q: update this test with it", c)
		}
	}
	addr := temporalService(t)
	root := t.TempDir()
	copyTree(t, filepath.Join("..", "examples"), filepath.Join(root, "examples"))
	env := []string{"TEMPORAL_ADDRESS=" + addr}
	words := func(s string) []string { return strings.Fields(s)[1:] } // without bin/symbi: the test's binary
	// The worker stops when the test ends (start's cleanup).
	start(t, call{dir: root, env: env, timeout: 10 * time.Minute}, words(readmeWorker)...)
	state := t.TempDir()
	local := symbi(t, call{dir: root}, "run", "--state-dir", state, "examples/quickstart.hcl")
	if local.code != 0 {
		t.Fatalf("local run: %s", local)
	}
	onTemporal := symbi(t, call{dir: root, env: env}, words(readmeRun)...)
	if onTemporal.code != 0 || onTemporal.stdout != local.stdout || !strings.Contains(onTemporal.stdout, "42") {
		t.Fatalf("%s: want the local run's answer %q\n%s", readmeRun, local.stdout, onTemporal)
	}
	for _, line := range []string{`→ calculator {"expression":"6 * 7"}`, "✓ allow calculator by policy.rules", "← calculator: 42", "completed · 2 iterations · 79 tokens"} {
		if !strings.Contains(onTemporal.stderr, line) {
			t.Errorf("the run on Temporal does not show %q\n%s", line, onTemporal)
		}
	}
	// runs show renders the same timeline for both, but for the times and
	// the run id.
	m := summaryRunRE.FindStringSubmatch(onTemporal.stderr)
	if m == nil {
		t.Fatalf("no run id in the summary:\n%s", onTemporal)
	}
	shownLocal := symbi(t, call{dir: root}, "runs", "show", "--state-dir", state, "latest")
	shownTemporal := symbi(t, call{dir: root, env: env}, "runs", "show", "--temporal", m[1])
	if shownLocal.code != 0 || shownTemporal.code != 0 {
		t.Fatalf("runs show:\n%s\n%s", shownLocal, shownTemporal)
	}
	if a, b := timelineText(shownLocal.stdout), timelineText(shownTemporal.stdout); a != b {
		t.Errorf("runs show differs:\n--- local\n%s\n--- on Temporal\n%s", a, b)
	}
}

var (
	summaryRunRE = regexp.MustCompile(`· run (\S+)`)
	offsetRE     = regexp.MustCompile(`(?m)^  \+\S+ +`)
	headlineRE   = regexp.MustCompile(`(?m)^run \S+`)
)

// timelineText is runs show's text without the events' time offsets and
// the run's id.
func timelineText(s string) string {
	return headlineRE.ReplaceAllString(offsetRE.ReplaceAllString(s, "  "), "run ID")
}
