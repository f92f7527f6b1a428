package exepages

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"os"
	"testing"
)

// elfFile is the start of an ELF file: its header and program headers of
// the given types, in the byte order and class given.
func elfFile(class elf.Class, bo binary.ByteOrder, typ elf.Type, progs ...elf.ProgType) []byte {
	var b bytes.Buffer
	ident := [16]byte{0x7f, 'E', 'L', 'F', byte(class), 1, 1}
	if bo == binary.BigEndian {
		ident[5] = 2
	}
	if class == elf.ELFCLASS64 {
		h := elf.Header64{Ident: ident, Type: uint16(typ), Machine: uint16(elf.EM_X86_64), Version: 1,
			Phoff: 64, Ehsize: 64, Phentsize: 56, Phnum: uint16(len(progs))}
		binary.Write(&b, bo, h)
		for _, p := range progs {
			binary.Write(&b, bo, elf.Prog64{Type: uint32(p)})
		}
		return b.Bytes()
	}
	h := elf.Header32{Ident: ident, Type: uint16(typ), Machine: uint16(elf.EM_386), Version: 1,
		Phoff: 52, Ehsize: 52, Phentsize: 32, Phnum: uint16(len(progs))}
	binary.Write(&b, bo, h)
	for _, p := range progs {
		binary.Write(&b, bo, elf.Prog32{Type: uint32(p)})
	}
	return b.Bytes()
}

func TestDataIsPristine(t *testing.T) {
	le, be := binary.LittleEndian, binary.BigEndian
	exec64 := elfFile(elf.ELFCLASS64, le, elf.ET_EXEC, elf.PT_PHDR, elf.PT_LOAD, elf.PT_LOAD, elf.PT_NOTE)
	for _, tc := range []struct {
		name string
		file []byte
		want bool
	}{
		{"an executable, no RELRO (Go's default on linux/amd64)", exec64, true},
		{"32-bit, big-endian", elfFile(elf.ELFCLASS32, be, elf.ET_EXEC, elf.PT_LOAD), true},
		{"position-independent", elfFile(elf.ELFCLASS64, le, elf.ET_DYN, elf.PT_LOAD), false},
		{"with a RELRO segment", elfFile(elf.ELFCLASS64, le, elf.ET_EXEC, elf.PT_LOAD, elf.PT_GNU_RELRO), false},
		{"32-bit with RELRO", elfFile(elf.ELFCLASS32, le, elf.ET_EXEC, elf.PT_GNU_RELRO), false},
		{"program headers cut off", exec64[:len(exec64)-1], false},
		{"the header cut off", exec64[:40], false},
		{"not ELF", []byte("#!/bin/sh\necho hello, this is not an executable's header at all\n"), false},
		{"empty", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := dataIsPristine(tc.file); got != tc.want {
				t.Errorf("dataIsPristine = %v, want %v", got, tc.want)
			}
			if got := oraclePristine(tc.file); got != tc.want {
				t.Errorf("debug/elf says %v, want %v (the test's file is wrong)", got, tc.want)
			}
		})
	}
}

// The test binary itself: what debug/elf reads from the whole file.
func TestDataIsPristineOnThisExecutable(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	f, err := elf.Open(exe)
	if err != nil {
		t.Skipf("not ELF: %v", err)
	}
	defer f.Close()
	want := f.Type == elf.ET_EXEC
	for _, p := range f.Progs {
		want = want && p.Type != elf.PT_GNU_RELRO
	}
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	if got := dataIsPristine(b[:min(len(b), 4096)]); got != want {
		t.Errorf("dataIsPristine(the first 4 kB of %s) = %v, debug/elf (type %v, %d program headers) says %v", exe, got, f.Type, len(f.Progs), want)
	}
}

// oraclePristine is dataIsPristine by debug/elf: false when it cannot read
// the header and every program header from b.
func oraclePristine(b []byte) bool {
	f, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		return false
	}
	if f.Type != elf.ET_EXEC {
		return false
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_GNU_RELRO {
			return false
		}
	}
	return true
}

// FuzzDataIsPristine: never a panic, and wherever debug/elf reads the
// bytes (it checks more of the file than dataIsPristine needs, its section
// headers among them), the same answer.
func FuzzDataIsPristine(f *testing.F) {
	f.Add(elfFile(elf.ELFCLASS64, binary.LittleEndian, elf.ET_EXEC, elf.PT_LOAD, elf.PT_LOAD))
	f.Add(elfFile(elf.ELFCLASS64, binary.LittleEndian, elf.ET_EXEC, elf.PT_GNU_RELRO))
	f.Add(elfFile(elf.ELFCLASS32, binary.BigEndian, elf.ET_DYN, elf.PT_LOAD))
	f.Add([]byte("\x7fELF"))
	f.Fuzz(func(t *testing.T, b []byte) {
		got := dataIsPristine(b)
		if _, err := elf.NewFile(bytes.NewReader(b)); err != nil {
			return
		}
		if want := oraclePristine(b); got != want {
			t.Errorf("dataIsPristine = %v, debug/elf says %v, for %q", got, want, b)
		}
	})
}
