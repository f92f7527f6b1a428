package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Best-of-N on Temporal through the real binaries: symbi run --temporal
// --best-of ends with the answer, usage, iterations and termination of the
// same block run locally; its candidates ran as child workflows on the
// worker, and symbi runs show renders the candidates' timeline.
func TestTemporalBestOfN(t *testing.T) {
	addr := temporalService(t)
	dir := filepath.Join(t.TempDir(), "examples")
	copyTree(t, filepath.Join("..", "examples"), dir)
	queue := "e2e-bestofn-" + time.Now().Format("150405.000000")
	start(t, call{dir: dir, timeout: 10 * time.Minute}, "worker", "--temporal", addr, "--task-queue", queue, ".")
	for _, c := range []struct{ file, block string }{
		{"best_of_n.hcl", "answer"},           // expr scorer, majority vote
		{"best_of_n_selector.hcl", "concise"}, // command selector, a gated tool activity
	} {
		t.Run(c.block, func(t *testing.T) {
			local := symbi(t, call{dir: dir}, "run", "--json", "--state-dir", t.TempDir(), "--best-of", c.block, c.file)
			if local.code != 0 {
				t.Fatalf("local run: %s", local)
			}
			want := temporalSummaryOf(t, local)
			res := start(t, call{dir: dir}, "run", "--temporal="+addr, "--task-queue", queue, "--json", "--best-of", c.block, c.file).wait(t)
			if res.code != 0 {
				t.Fatalf("run on Temporal: %s", res)
			}
			got := temporalSummaryOf(t, res)
			if got.Answer != want.Answer || got.Termination.Reason != "completed" || got.Iterations != want.Iterations || fmt.Sprint(got.Usage) != fmt.Sprint(want.Usage) {
				t.Errorf("on Temporal: %+v\nlocal: %+v", got, want)
			}
			show := symbi(t, call{dir: dir}, "runs", "show", "--temporal="+addr, got.Run)
			if show.code != 0 || !strings.Contains(show.stdout, "candidate") || !strings.Contains(show.stdout, "selected") {
				t.Errorf("runs show --temporal %s: want the candidates and the selection\n%s", got.Run, show)
			}
		})
	}
}
