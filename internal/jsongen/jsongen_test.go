package jsongen

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// What the generator cannot write as encoding/json would is an error that
// names the field, never code that writes something else. (What it writes
// is held to encoding/json by the tests of the packages it serves: plan's
// TestEncodeMatchesEncodingJSON and FuzzEncode.)
func TestUnsupportedIsAnError(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"type T struct{ Inner }\ntype Inner struct{ A int }", "embedded fields"},
		{"type T struct{ A any }", "T.A: type any is not supported"},
		{"type T struct{ A interface{} }", "T.A: type interface{} is not supported"},
		{"type T struct{ A int `json:\"a,string\"` }", `the json option "string"`},
		{"type T struct{ A int `json:\"a,omitzero\"` }", `the json option "omitzero"`},
		{"type T struct{ A []byte }", "T.A: []byte"},
		{"type T struct{ A [2]int }", "T.A: arrays"},
		{"type T struct{ A map[int]string }", "T.A: only maps with string keys"},
		{"type T struct{ A float32 }", "T.A: type float32"},
		{"type T struct{ A U }\ntype U struct{}\nfunc (U) MarshalJSON() ([]byte, error) { return nil, nil }", "U has its own JSON form: give it an appendJSON method"},
		{"type T struct{ A U }\ntype U struct{}\nfunc (U) MarshalText() ([]byte, error) { return nil, nil }", "U has its own JSON form"},
		{"type T struct{ A int `json:\"x\"`; B int `json:\"x\"` }", `two fields named "x"`},
		{"type T struct{ A time.Time }", "T.A: type time.Time is not supported"},
		{"type T int", "T is not a struct type"},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "t.go"), []byte("package p\n\n"+tc.src+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Generate(dir, []string{"T"}, "test")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s:\n got error %v\nwant one with %q", tc.src, err, tc.want)
		}
	}
}

func TestMissingRoot(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "t.go"), []byte("package p\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Generate(dir, []string{"T"}, "test"); err == nil || !strings.Contains(err.Error(), "no type T") {
		t.Errorf("got %v", err)
	}
	if _, err := Generate(t.TempDir(), []string{"T"}, "test"); err == nil || !strings.Contains(err.Error(), "no Go files") {
		t.Errorf("empty directory: got %v", err)
	}
}
