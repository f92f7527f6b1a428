package sibling

import (
	"os"
	"os/exec"
	"path/filepath"
)

// Find is the path of the executable name: beside the running executable
// (after symlinks), then on PATH. When it is in neither, ok is false and
// dir is the directory it was looked for beside ("DIR" when the running
// executable's is unknown), for the caller's message on how to build it.
func Find(name string) (path, dir string, ok bool) {
	dir = "DIR"
	if self, err := os.Executable(); err == nil {
		if s, err := filepath.EvalSymlinks(self); err == nil {
			self = s
		}
		dir = filepath.Dir(self)
		beside := filepath.Join(dir, name)
		if st, err := os.Stat(beside); err == nil && !st.IsDir() {
			return beside, dir, true
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, dir, true
	}
	return "", dir, false
}
