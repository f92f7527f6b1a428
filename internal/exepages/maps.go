package exepages

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
)

// mapping is one mapping of /proc/PID/smaps: an address range, its
// permissions, the file it maps (device and inode; inode 0 for memory that
// maps no file), and how much of it is private copies (pages written since
// they were mapped, such as relocations a dynamic loader applied).
type mapping struct {
	start, end uintptr
	perms      string // "r-xp"
	dev        string // "fe:00"
	inode      uint64
	rss        uint64 // kB resident
	anonymous  uint64 // kB
}

// parseMapping reads the first line of a mapping in /proc/PID/smaps (the
// line /proc/PID/maps has for it):
//
//	00400000-014f3000 r-xp 00000000 fe:00 11471487    /usr/local/bin/symbi
func parseMapping(line []byte) (mapping, error) {
	f := bytes.Fields(line)
	if len(f) < 5 {
		return mapping{}, fmt.Errorf("maps line %q: %d fields, want at least 5", line, len(f))
	}
	lo, hi, ok := bytes.Cut(f[0], []byte("-"))
	if !ok {
		return mapping{}, fmt.Errorf("maps line %q: address range without '-'", line)
	}
	start, err := strconv.ParseUint(string(lo), 16, 64)
	if err != nil {
		return mapping{}, fmt.Errorf("maps line %q: %w", line, err)
	}
	end, err := strconv.ParseUint(string(hi), 16, 64)
	if err != nil {
		return mapping{}, fmt.Errorf("maps line %q: %w", line, err)
	}
	if end < start || uint64(uintptr(end)) != end {
		return mapping{}, fmt.Errorf("maps line %q: bad address range", line)
	}
	if len(f[1]) != 4 {
		return mapping{}, fmt.Errorf("maps line %q: permissions %q", line, f[1])
	}
	inode, err := strconv.ParseUint(string(f[4]), 10, 64)
	if err != nil {
		return mapping{}, fmt.Errorf("maps line %q: %w", line, err)
	}
	return mapping{start: uintptr(start), end: uintptr(end), perms: string(f[1]), dev: string(f[3]), inode: inode}, nil
}

// parseSmaps reads /proc/PID/smaps: each mapping's first line, then lines
// of "Key: value" of which it keeps Rss and Anonymous.
func parseSmaps(smaps []byte) ([]mapping, error) {
	var all []mapping
	for line := range bytes.Lines(smaps) {
		first, _, _ := bytes.Cut(bytes.TrimSpace(line), []byte(" "))
		switch {
		case len(first) == 0:
			continue
		case first[len(first)-1] == ':':
			if string(first) != "Rss:" && string(first) != "Anonymous:" {
				continue
			}
			if len(all) == 0 {
				return nil, fmt.Errorf("smaps line %q before any mapping", line)
			}
			f := bytes.Fields(line)
			if len(f) != 3 || string(f[2]) != "kB" {
				return nil, fmt.Errorf("smaps line %q: want \"%s N kB\"", line, first)
			}
			n, err := strconv.ParseUint(string(f[1]), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("smaps line %q: %w", line, err)
			}
			if m := &all[len(all)-1]; string(first) == "Rss:" {
				m.rss = n
			} else {
				m.anonymous = n
			}
		default:
			m, err := parseMapping(line)
			if err != nil {
				return nil, err
			}
			all = append(all, m)
		}
	}
	return all, nil
}

// executableRanges returns, of the mappings in smaps (or maps), the
// executable's code: the read-only, executable, private mappings of the
// file that maps pc (an address in that code), whatever its path is now
// (moved, deleted), never written as far as smaps tells; with data, its
// read-only data mappings as well.
func executableRanges(smaps []byte, pc uintptr, data bool) ([]mapping, error) {
	all, err := parseSmaps(smaps)
	if err != nil {
		return nil, err
	}
	var exe *mapping
	for i, m := range all {
		if m.start <= pc && pc < m.end {
			exe = &all[i]
		}
	}
	if exe == nil || exe.inode == 0 {
		return nil, errors.New("no file mapping holds the executable's code")
	}
	var out []mapping
	for _, m := range all {
		// Read-only data only when the caller knows no loader wrote into
		// it (dataIsPristine): a loader writes relocations into a
		// position-independent executable's read-only data before it makes
		// it read-only, and dropping a private page that was written would
		// lose the write.
		if m.dev == exe.dev && m.inode == exe.inode && (m.perms == "r-xp" || data && m.perms == "r--p") && m.anonymous == 0 {
			out = append(out, m)
		}
	}
	return out, nil
}
