package exepages

import (
	"os"
	"reflect"
	"testing"

	"golang.org/x/sys/unix"
)

// residentKB is how much of the test binary's code is resident in the
// process, by /proc/self/smaps.
func residentKB(t *testing.T) uint64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Skipf("no smaps: %v", err)
	}
	ranges, err := executableRanges(b, reflect.ValueOf(residentKB).Pointer(), false)
	if err != nil {
		t.Fatal(err)
	}
	var kb uint64
	for _, r := range ranges {
		kb += r.rss
	}
	return kb
}

func TestTrimDropsTheExecutablesPages(t *testing.T) {
	if traced() {
		t.Skip("a debugger is attached: Trim keeps every page")
	}
	// Map every page of the executable's code first, so that what Trim
	// drops does not depend on what ran before.
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Skipf("no smaps: %v", err)
	}
	ranges, err := executableRanges(b, reflect.ValueOf(residentKB).Pointer(), false)
	if err != nil {
		t.Fatal(err)
	}
	var size uint64
	for _, r := range ranges {
		if _, _, e := unix.Syscall(unix.SYS_MADVISE, r.start, r.end-r.start, unix.MADV_POPULATE_READ); e != 0 {
			t.Skipf("madvise(MADV_POPULATE_READ): %v", e)
		}
		size += uint64(r.end-r.start) / 1024
	}
	before := residentKB(t)
	if before < size*9/10 {
		t.Fatalf("populated %d kB of mappings, but %d kB are resident", size, before)
	}
	n, err := Trim()
	if err != nil {
		t.Fatal(err)
	}
	after := residentKB(t)
	t.Logf("advised %d kB; resident %d kB before, %d kB after", n/1024, before, after)
	if n == 0 {
		t.Fatal("Trim advised nothing")
	}
	// What runs between the two readings (this test, the runtime, the
	// reading itself) faults pages back in, 64 kB at a time; most stay out.
	if after > before*3/4 {
		t.Errorf("resident pages of the executable: %d kB before Trim, %d kB after; want at most three quarters", before, after)
	}
}
