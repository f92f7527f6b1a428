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
	got, err := Conventions(filepath.Join(root, "svc/api/handlers"), root, "conventions")
	if err != nil {
		t.Fatal(err)
	}
	want := []Convention{
		{Dir: filepath.Join(root, "svc/api"), Path: filepath.Join(root, "svc/api/conventions.md"), Text: "api"},
		{Dir: root, Path: filepath.Join(root, "conventions.md"), Text: "repo-wide"},
		{Dir: root, Path: filepath.Join(root, "conventions/a.md"), Text: "repo a"},
		{Dir: root, Path: filepath.Join(root, "conventions/b.md"), Text: "repo b"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("Conventions mismatch (-want +got):\n%s", diff)
	}
}

func TestConventionsStopsAtStopAt(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"conventions.md":     "above the stop",
		"sub/conventions.md": "at the stop",
	})
	got, err := Conventions(filepath.Join(root, "sub"), filepath.Join(root, "sub"), "conventions")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Text != "at the stop" {
		t.Fatalf("got %+v, want only the convention at stopAt", got)
	}
}

func TestConventionsErrors(t *testing.T) {
	root := t.TempDir()
	for _, name := range []string{"", ".", "..", "a/b"} {
		if _, err := Conventions(root, root, name); !errors.Is(err, ErrBadConventions) {
			t.Errorf("name %q: err = %v, want ErrBadConventions", name, err)
		}
	}
	other := t.TempDir()
	if _, err := Conventions(root, other, "conventions"); !errors.Is(err, ErrBadConventions) {
		t.Errorf("stopAt outside: err = %v, want ErrBadConventions", err)
	}
	writeFiles(t, root, map[string]string{"conventions.md": "\xff\xfe"})
	if _, err := Conventions(root, root, "conventions"); err == nil || !strings.Contains(err.Error(), "not UTF-8") {
		t.Errorf("binary conventions file: err = %v", err)
	}
	writeFiles(t, root, map[string]string{"conventions.md": strings.Repeat("x", MaxConventionBytes+1)})
	if _, err := Conventions(root, root, "conventions"); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("oversized conventions file: err = %v", err)
	}
}
