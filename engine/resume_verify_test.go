package engine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/symbi-dev/symbi/journal"
	"github.com/symbi-dev/symbi/seal"
)

// killedRun runs chainHCL to the end and cuts its journal back to the
// lines before iteration 3's observations, as a kill would leave it (every
// line it keeps still verifies). It returns the plan's directory, the state
// directory and the run id.
func killedRun(t *testing.T) (dir, state, runID string) {
	t.Helper()
	p, dir := fixture{"main.hcl": chainHCL, "script.json": strings.ReplaceAll(chainScript, `"latency":"150ms",`, "")}.compile(t)
	e, _ := newEngine(t, p, dir, nil)
	res := mustRun(t, e, "a", "start", RunOptions{})
	if err := e.Sync(); err != nil {
		t.Fatal(err)
	}
	evs := journalOf(t, e, res.RunID)
	cut := 0
	for i, ev := range evs {
		if ev.Type == journal.ReasoningComplete && ev.Iteration == 3 {
			cut = i + 2
		}
	}
	path := journal.Path(e.StateDir(), res.RunID)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	if err := os.WriteFile(path, []byte(strings.Join(lines[:cut], "")), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, e.StateDir(), res.RunID
}

// copyState copies a state directory (key and runs) to a new one.
func copyState(t *testing.T, from string) string {
	t.Helper()
	to := filepath.Join(t.TempDir(), "state")
	err := filepath.WalkDir(from, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o700)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
	return to
}

func editFile(t *testing.T, path string, edit func(string) string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	after := edit(string(b))
	if after == string(b) {
		t.Fatalf("the edit changed nothing in %s", path)
	}
	if err := os.WriteFile(path, []byte(after), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestResumeVerifies: ResumeRun continues an intact journal and recorded
// the plan's digest in every started line; it refuses, before running
// anything, a run another holder has locked, a journal with an edited line
// or without MACs, and a plan that is not the one the run started with.
func TestResumeVerifies(t *testing.T) {
	dir, state, id := killedRun(t)
	noEnv := Options{LookupEnv: func(string) (string, bool) { return "", false }}

	t.Run("intact", func(t *testing.T) {
		sd := copyState(t, state)
		res, err := ResumeRun(context.Background(), sd, id, noEnv)
		if err != nil || res.Termination.Reason != Completed || res.Answer != "the answer is 8" {
			t.Fatalf("ResumeRun: %v, %+v", err, res)
		}
		evs, err := journal.ReadRun(sd, id)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(filepath.Join(journal.RunDir(sd, id), journal.PlanFileName))
		n := 0
		for _, ev := range evs {
			if ev.Type != journal.Started {
				continue
			}
			n++
			var st startedData
			if err := ev.Decode(&st); err != nil {
				t.Fatal(err)
			}
			if st.PlanDigest != seal.Digest(b) || st.JournalFormat != journal.FormatVersion || st.BaseDir != dir {
				t.Errorf("started line %d: plan_digest %s (plan.json %s), journal_format %d, base_dir %s", ev.Seq, st.PlanDigest, seal.Digest(b), st.JournalFormat, st.BaseDir)
			}
		}
		if n != 2 {
			t.Errorf("%d started lines, want 2", n)
		}
		if locked, _ := journal.Locked(sd, id); locked {
			t.Error("the run is still locked after ResumeRun returned")
		}
	})

	for _, tc := range []struct {
		name string
		edit func(t *testing.T, sd string)
		want error
		says string
	}{
		{"locked by another holder", func(t *testing.T, sd string) {
			l, err := journal.Lock(sd, id)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Unlock() })
		}, journal.ErrLocked, "in use"},
		{"base_dir edited", func(t *testing.T, sd string) {
			editFile(t, journal.Path(sd, id), func(s string) string {
				return strings.Replace(s, `"base_dir":"`+dir+`"`, `"base_dir":"/"`, 1)
			})
		}, journal.ErrTampered, "journal line 1"},
		{"unsigned", func(t *testing.T, sd string) {
			editFile(t, journal.Path(sd, id), func(s string) string {
				var out []string
				for _, l := range strings.SplitAfter(s, "\n") {
					if i := strings.LastIndex(l, `,"mac":"`); i >= 0 {
						l = l[:i] + "}\n"
					}
					out = append(out, l)
				}
				return strings.Join(out, "")
			})
		}, journal.ErrUnsigned, "unsigned"},
		{"plan edited", func(t *testing.T, sd string) {
			editFile(t, filepath.Join(journal.RunDir(sd, id), journal.PlanFileName), func(s string) string {
				return strings.Replace(s, `"calculator"`, `"calculator" `, 1)
			})
		}, journal.ErrPlanChanged, journal.PlanFileName},
	} {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			sd := copyState(t, state)
			tc.edit(t, sd)
			before, _ := os.ReadFile(journal.Path(sd, id))
			_, err := ResumeRun(context.Background(), sd, id, noEnv)
			if !errors.Is(err, ErrNotResumable) || !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("ResumeRun: %v; want ErrNotResumable and %v saying %q", err, tc.want, tc.says)
			}
			if after, _ := os.ReadFile(journal.Path(sd, id)); string(after) != string(before) {
				t.Error("a refused resume wrote to the journal")
			}
		})
	}
}

// TestEngineResumeChecksItsPlan: Engine.Resume compares the engine's own
// plan with the one the run started with, and takes the run's lock.
func TestEngineResumeChecksItsPlan(t *testing.T) {
	dir, state, id := killedRun(t)
	p, _ := fixture{"main.hcl": chainHCL + "\n# another plan\nbudget \"b\" {\n  max_iterations = 9\n}\n", "script.json": chainScript}.compile(t)
	other, _ := newEngine(t, p, dir, func(o *Options) { o.StateDir = copyState(t, state) })
	if _, err := other.Resume(context.Background(), id); !errors.Is(err, journal.ErrPlanChanged) || !errors.Is(err, ErrNotResumable) {
		t.Errorf("Resume with another plan: %v, want ErrPlanChanged", err)
	}
	if locked, _ := journal.Locked(other.StateDir(), id); locked {
		t.Error("a refused Resume left the run locked")
	}
}
