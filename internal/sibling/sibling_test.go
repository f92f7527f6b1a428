package sibling

import (
	"os"
	"path/filepath"
	"testing"
)

func TestFind(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	self, _ = filepath.EvalSymlinks(self)
	name := filepath.Base(self)
	// The running executable is beside itself.
	if path, dir, ok := Find(name); !ok || path != self || dir != filepath.Dir(self) {
		t.Errorf("Find(%q) = %q, %q, %v; want %q beside itself", name, path, dir, ok, self)
	}
	// On PATH when not beside.
	bin := t.TempDir()
	onPath := filepath.Join(bin, "sibling-test-tool")
	if err := os.WriteFile(onPath, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	if path, _, ok := Find("sibling-test-tool"); !ok || path != onPath {
		t.Errorf("Find on PATH = %q, %v; want %q", path, ok, onPath)
	}
	// Nowhere: not ok, and the directory it was looked for beside.
	if path, dir, ok := Find("sibling-test-none"); ok || path != "" || dir != filepath.Dir(self) {
		t.Errorf("Find(missing) = %q, %q, %v; want not found beside %q", path, dir, ok, filepath.Dir(self))
	}
}
