package journal

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"
)

// TestKilledWriter kills a process that is appending as fast as it can,
// with SIGKILL, and checks that the run was locked while it wrote and is
// not after, and that every line it was told was written is in the
// journal, verified, which then resumes cleanly.
func TestKilledWriter(t *testing.T) {
	if dir := os.Getenv("SYMBI_JOURNAL_KILL_CHILD"); dir != "" {
		appendForever(dir)
		return
	}
	if testing.Short() {
		t.Skip("spawns a process")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledWriter$")
	cmd.Env = append(os.Environ(), "SYMBI_JOURNAL_KILL_CHILD="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acked := int64(0)
	sc := bufio.NewScanner(out)
	for acked < 200 && sc.Scan() {
		if n, err := strconv.ParseInt(sc.Text(), 10, 64); err == nil {
			acked = n
		}
	}
	// While the child writes, the run is its own.
	if locked, err := Locked(dir, "killed"); !locked || err != nil {
		t.Errorf("the writing child's run is not locked (%v)", err)
	}
	if _, err := OpenAppend(dir, "killed", SyncBackground); !errors.Is(err, ErrLocked) {
		t.Errorf("OpenAppend while the child writes: %v, want ErrLocked", err)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if acked < 200 {
		t.Fatalf("child stopped after %d appends", acked)
	}
	// The kernel released the dead child's lock; its lines all verify.
	if locked, err := Locked(dir, "killed"); locked || err != nil {
		t.Errorf("the killed child's run is still locked (%v)", err)
	}
	evs, err := ReadRun(dir, "killed")
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(evs)) < acked {
		t.Fatalf("%d lines acknowledged, %d in the journal", acked, len(evs))
	}
	w, err := OpenAppend(dir, "killed", SyncBackground)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Append(Event{Type: Started}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	after, err := ReadRun(dir, "killed")
	if err != nil || len(after) != len(evs)+1 {
		t.Fatalf("after resume: %d events (%v), want %d", len(after), err, len(evs)+1)
	}
}

func appendForever(dir string) {
	w, err := Create(dir, "killed", SyncBackground)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for i := 0; ; i++ {
		if err := w.Record("agent.a", i, ToolResult, ToolResultData{CallID: strconv.Itoa(i), Output: "some output of a tool"}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println(w.Seq())
	}
}
