package knowledge

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
)

// A store opened read-only recalls what was stored, refuses Put, shares
// the file with other read-only openers, and is never created.
func TestReadOnly(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "k.db")
	if _, err := OpenWith(path, Options{ReadOnly: true}); err == nil {
		t.Fatal("a missing store opened read-only")
	}
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, Fact{Subject: "Earth", Predicate: "has", Object: "one moon", Confidence: 1}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	a, err := OpenWith(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := OpenWith(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("a second read-only opener: %v", err)
	}
	defer b.Close()
	got, err := b.Recall(ctx, "Earth moon", 5, 0)
	if err != nil || len(got) != 1 || got[0].Object != "one moon" {
		t.Fatalf("recall %v %v", got, err)
	}
	if err := a.Put(ctx, Fact{Subject: "Mars", Predicate: "has", Object: "two moons", Confidence: 1}); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("put on a read-only store: %v", err)
	}
}
