package exepages

import "encoding/binary"

// ELF constants read by dataIsPristine (the ELF specification; debug/elf
// names them ET_EXEC and PT_GNU_RELRO).
const (
	elfTypeExec  = 2
	elfGNURelro  = 0x6474e552
	elfHeader64  = 64
	elfHeader32  = 52
	maxELFPrefix = 64 << 10 // program headers further in are not looked for
)

// dataIsPristine reports, from the start of an executable's file (its ELF
// header and program headers), whether its read-only data is in memory
// exactly as in the file: an executable that is not position-independent
// (type EXEC) and has no PT_GNU_RELRO segment, so no loader writes
// relocations into data it then makes read-only. Its read-only pages can
// then be dropped and read again from the file. Anything else, an ELF
// header it cannot read or program headers beyond prefix included, is
// false: keep the pages.
func dataIsPristine(prefix []byte) bool {
	if len(prefix) < elfHeader32 || string(prefix[:4]) != "\x7fELF" || prefix[6] != 1 { // version 1, the only one
		return false
	}
	var bo binary.ByteOrder
	switch prefix[5] {
	case 1:
		bo = binary.LittleEndian
	case 2:
		bo = binary.BigEndian
	default:
		return false
	}
	if bo.Uint16(prefix[16:]) != elfTypeExec {
		return false
	}
	var phoff uint64
	var entsize, num uint16
	switch prefix[4] {
	case 1: // 32-bit
		phoff = uint64(bo.Uint32(prefix[28:]))
		entsize, num = bo.Uint16(prefix[42:]), bo.Uint16(prefix[44:])
	case 2: // 64-bit
		if len(prefix) < elfHeader64 {
			return false
		}
		phoff = bo.Uint64(prefix[32:])
		entsize, num = bo.Uint16(prefix[54:]), bo.Uint16(prefix[56:])
	default:
		return false
	}
	if num == 0 {
		return true // no program headers, so none is RELRO
	}
	if entsize < 4 || phoff > uint64(len(prefix)) || uint64(num)*uint64(entsize) > uint64(len(prefix))-phoff {
		return false
	}
	for i := range uint64(num) {
		if bo.Uint32(prefix[phoff+i*uint64(entsize):]) == elfGNURelro {
			return false
		}
	}
	return true
}
