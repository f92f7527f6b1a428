//go:build linux

package lockfile

import (
	"fmt"
	"io/fs"
	"syscall"
)

// fileStamp is what changes when a file's content does: device, inode,
// size, modification and change times. The change time cannot be set back
// by a program, so a file rewritten with its old modification time still
// gets a new stamp.
func fileStamp(info fs.FileInfo) string {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	return fmt.Sprintf("%d:%d:%d:%d.%d:%d.%d", st.Dev, st.Ino, st.Size, st.Mtim.Sec, st.Mtim.Nsec, st.Ctim.Sec, st.Ctim.Nsec)
}
