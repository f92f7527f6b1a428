package exepages

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"

	"golang.org/x/sys/unix"
)

// Trim drops the executable's code from the process's page tables, and
// its read-only data when no loader wrote into it (dataIsPristine), so
// that only the code and data used from now on are resident. It reports how many
// bytes of mappings it advised; 0 and no error when it chose not to (a
// debugger is attached).
func Trim() (int, error) {
	if traced() {
		return 0, nil
	}
	// maps, not smaps: smaps walks every page table of the process to
	// count pages, 0.5 ms.
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return 0, err
	}
	ranges, err := executableRanges(maps, reflect.ValueOf(Trim).Pointer(), pristine())
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, r := range ranges {
		if _, _, e := unix.Syscall(unix.SYS_MADVISE, r.start, r.end-r.start, unix.MADV_DONTNEED); e != 0 {
			errs = append(errs, fmt.Errorf("madvise %#x-%#x: %w", r.start, r.end, e))
			continue
		}
		n += int(r.end - r.start)
	}
	return n, errors.Join(errs...)
}

// pristine reports whether the executable's read-only data may be dropped
// too (dataIsPristine), from the start of /proc/self/exe.
func pristine() bool {
	f, err := os.Open("/proc/self/exe")
	if err != nil {
		return false
	}
	defer f.Close()
	b := make([]byte, 4096) // a Go executable's program headers follow its ELF header
	n, _ := io.ReadFull(f, b)
	return dataIsPristine(b[:n])
}

// traced reports whether a debugger or tracer is attached.
func traced() bool {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return true // cannot tell: keep every page
	}
	for line := range bytes.Lines(b) {
		if v, ok := bytes.CutPrefix(line, []byte("TracerPid:")); ok {
			return string(bytes.TrimSpace(v)) != "0"
		}
	}
	return true
}
