package knowledge

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestConventionsNearerFirst(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"conventions.md":                 "repo-wide",
		"conventions/b.md":               "repo b",
		"conventions/a.md":               "repo a",
		"conventions/notes.txt":          "not markdown",
		"svc/api/conventions.md":         "api",
		"svc/api/handlers/conventions/x": "no .md",
		"svc/other/conventions.md":       "sibling, never read",
	})
	if err := os.MkdirAll(filepath.Join(root, "svc/api/handlers"), 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := Conventions(os.DirFS(root), "svc/api/handlers", "conventions")
	if err != nil {
		t.Fatal(err)
	}
	want := []Convention{
		{Dir: "svc/api", Path: "svc/api/conventions.md", Text: "api"},
		{Dir: ".", Path: "conventions.md", Text: "repo-wide"},
		{Dir: ".", Path: "conventions/a.md", Text: "repo a"},
		{Dir: ".", Path: "conventions/b.md", Text: "repo b"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("Conventions mismatch (-want +got):\n%s", diff)
	}
}

// The walk ends at the file system's root: what lies above it is never read.
func TestConventionsStopsAtTheRoot(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"conventions.md":     "above the root",
		"sub/conventions.md": "at the root",
	})
	got, err := Conventions(os.DirFS(filepath.Join(root, "sub")), ".", "conventions")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Text != "at the root" {
		t.Fatalf("got %+v, want only the convention at the root", got)
	}
}

func TestConventionsErrors(t *testing.T) {
	root := t.TempDir()
	fsys := os.DirFS(root)
	for _, name := range []string{"", ".", "..", "a/b"} {
		if _, err := Conventions(fsys, ".", name); !errors.Is(err, ErrBadConventions) {
			t.Errorf("name %q: err = %v, want ErrBadConventions", name, err)
		}
	}
	for _, dir := range []string{"..", "../x", "/abs", "a/../b"} {
		if _, err := Conventions(fsys, dir, "conventions"); !errors.Is(err, ErrBadConventions) {
			t.Errorf("dir %q outside the file system: err = %v, want ErrBadConventions", dir, err)
		}
	}
	writeFiles(t, root, map[string]string{"conventions.md": "\xff\xfe"})
	if _, err := Conventions(fsys, ".", "conventions"); err == nil || !strings.Contains(err.Error(), "not UTF-8") {
		t.Errorf("binary conventions file: err = %v", err)
	}
	writeFiles(t, root, map[string]string{"conventions.md": strings.Repeat("x", MaxConventionBytes+1)})
	if _, err := Conventions(fsys, ".", "conventions"); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("oversized conventions file: err = %v", err)
	}
}
