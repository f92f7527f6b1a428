package exepages

import (
	"fmt"
	"strings"
	"testing"
)

// A position-independent executable's smaps, abridged: text, read-only data
// of which the loader wrote a page (relocations), read-only data never
// written, writable data, the heap, a shared library, and code of the
// executable that a debugger wrote a breakpoint into.
const sampleSmaps = `555555554000-555555600000 r-xp 00000000 fe:00 1147 /usr/local/bin/symbi
Size:                688 kB
Rss:                 300 kB
Anonymous:             0 kB
VmFlags: rd ex mr mw me dw
555555600000-555555700000 r--p 000ac000 fe:00 1147 /usr/local/bin/symbi
Rss:                  40 kB
Anonymous:             8 kB
555555700000-555555800000 r--p 001ac000 fe:00 1147 /usr/local/bin/symbi
Rss:                 120 kB
Anonymous:             0 kB
555555800000-555555810000 rw-p 002ac000 fe:00 1147 /usr/local/bin/symbi
Anonymous:             4 kB
555555810000-555555900000 rw-p 00000000 00:00 0 
Anonymous:           100 kB
7ffff7a00000-7ffff7b00000 r-xp 00000000 fe:00 2211 /usr/lib/libc.so.6
Anonymous:             0 kB
7ffff7b00000-7ffff7c00000 r--p 00100000 fe:00 2211 /usr/lib/libc.so.6
Anonymous:             0 kB
7ffff7d00000-7ffff7d01000 r-xp 00000000 fe:00 1147 /usr/local/bin/symbi (deleted)
Anonymous:             4 kB
`

func TestExecutableRanges(t *testing.T) {
	for _, tc := range []struct {
		name string
		pc   uintptr
		data bool
		want string
	}{
		{"the executable's code, not its data nor written code", 0x555555560000, false, "555555554000-555555600000 r-xp"},
		{"with data, its read-only data too, never a written page", 0x555555560000, true, "555555554000-555555600000 r-xp, 555555700000-555555800000 r--p"},
		{"the code of a library maps another file", 0x7ffff7a10000, false, "7ffff7a00000-7ffff7b00000 r-xp"},
		{"and its read-only data", 0x7ffff7a10000, true, "7ffff7a00000-7ffff7b00000 r-xp, 7ffff7b00000-7ffff7c00000 r--p"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := executableRanges([]byte(sampleSmaps), tc.pc, tc.data)
			if err != nil {
				t.Fatal(err)
			}
			var s []string
			for _, m := range got {
				s = append(s, fmt.Sprintf("%x-%x %s", m.start, m.end, m.perms))
			}
			if strings.Join(s, ", ") != tc.want {
				t.Errorf("ranges = %s\nwant       %s", strings.Join(s, ", "), tc.want)
			}
		})
	}
}

func TestExecutableRangesErrors(t *testing.T) {
	for _, tc := range []struct {
		name, smaps string
		pc          uintptr
		want        string
	}{
		{"pc in no mapping", sampleSmaps, 0x1000, "no file mapping holds"},
		{"pc in anonymous memory", sampleSmaps, 0x555555810010, "no file mapping holds"},
		{"short line", "555555554000-555555600000 r-xp 00000000\n", 0x555555560000, "3 fields"},
		{"no range", "555555554000 r-xp 00000000 fe:00 1147 /x\n", 0x555555560000, "without '-'"},
		{"bad hex", "55555555400g-555555600000 r-xp 00000000 fe:00 1147 /x\n", 0x555555560000, "invalid syntax"},
		{"reversed range", "555555600000-555555554000 r-xp 00000000 fe:00 1147 /x\n", 0x555555560000, "bad address range"},
		{"bad permissions", "555555554000-555555600000 rx 00000000 fe:00 1147 /x\n", 0x555555560000, "permissions"},
		{"bad inode", "555555554000-555555600000 r-xp 00000000 fe:00 x /x\n", 0x555555560000, "invalid syntax"},
		{"anonymous first", "Anonymous: 0 kB\n", 0x555555560000, "before any mapping"},
		{"anonymous without unit", "555555554000-555555600000 r-xp 00000000 fe:00 1147 /x\nAnonymous: 4\n", 0x555555560000, "want \"Anonymous: N kB\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := executableRanges([]byte(tc.smaps), tc.pc, false)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// FuzzParseSmaps holds the parser to two properties: nothing panics, and
// every mapping it accepts is a well-formed range whose first line, printed
// again the way the kernel prints it, parses back to the same mapping.
func FuzzParseSmaps(f *testing.F) {
	f.Add([]byte(sampleSmaps))
	f.Add([]byte("0-0 ---p 0 0:0 0\n"))
	f.Add([]byte("ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0 [vsyscall]\nAnonymous: 0 kB\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		all, err := parseSmaps(b)
		if err != nil {
			return
		}
		for _, m := range all {
			if m.end < m.start || len(m.perms) != 4 {
				t.Fatalf("accepted a malformed mapping %+v", m)
			}
			line := fmt.Sprintf("%08x-%08x %s 00000000 %s %d /x", m.start, m.end, m.perms, m.dev, m.inode)
			back, err := parseMapping([]byte(line))
			if err != nil {
				t.Fatalf("%q does not parse back: %v", line, err)
			}
			back.rss, back.anonymous = m.rss, m.anonymous
			if back != m {
				t.Fatalf("%q parses back to %+v, want %+v", line, back, m)
			}
		}
	})
}
