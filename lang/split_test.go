package lang

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// forceSplit makes parseFile split every file, however small, for the
// duration of a test.
func forceSplit(t testing.TB) {
	old := splitThreshold
	splitThreshold = 0
	t.Cleanup(func() { splitThreshold = old })
}

// sameParse checks that parseFile gives exactly what hclsyntax.ParseConfig
// gives for src: the same body, ranges and diagnostics.
func sameParse(t testing.TB, name string, src []byte) {
	t.Helper()
	want, wantDiags := hclsyntax.ParseConfig(src, name, hcl.InitialPos)
	got, gotDiags := parseFile(src, name)
	if !reflect.DeepEqual(got.Body, want.Body) {
		t.Errorf("%s: body differs from a whole-file parse", name)
	}
	if !reflect.DeepEqual(gotDiags, wantDiags) {
		t.Errorf("%s: diagnostics differ:\n got %v\nwant %v", name, gotDiags, wantDiags)
	}
	if string(got.Bytes) != string(src) {
		t.Errorf("%s: file bytes differ", name)
	}
	// The navigation names the block around an offset, as in a
	// diagnostic's "in tool "x"" line.
	type contexter interface{ ContextString(int) string }
	gn, ok1 := got.Nav.(contexter)
	wn, ok2 := want.Nav.(contexter)
	if ok1 != ok2 {
		t.Fatalf("%s: navigation differs", name)
	}
	if ok1 {
		for off := 0; off < len(src); off += 1 + len(src)/97 {
			if g, w := gn.ContextString(off), wn.ContextString(off); g != w {
				t.Errorf("%s: context at byte %d is %q, want %q", name, off, g, w)
			}
		}
	}
}

func TestSplitParseMatchesWholeParse(t *testing.T) {
	forceSplit(t)
	var files []string
	for _, g := range []string{"../examples/*.hcl", "../testdata/errors/*.hcl", "../examples/*/*.hcl"} {
		m, _ := filepath.Glob(g)
		files = append(files, m...)
	}
	if len(files) < 20 {
		t.Fatalf("only %d files found", len(files))
	}
	for _, name := range files {
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		sameParse(t, name, src)
	}
}

// Cuts that fall where a block header only seems to start: the piece before
// is unterminated and the file is parsed whole, with hclsyntax's diagnostics.
func TestSplitParseCutsInsideThings(t *testing.T) {
	forceSplit(t)
	cases := map[string]string{
		"heredoc":           "tool \"a\" {\n  description = <<EOT\ntool \"b\" {\nEOT\n}\nagent \"c\" {\n}\n",
		"comment":           "/*\ntool \"b\" {\n*/\nagent \"c\" {\n}\n",
		"nested":            "agent \"a\" {\nloop {\n  mode = \"react\"\n}\n}\nagent \"b\" {\n}\n",
		"object":            "locals {\n  x = {\nfoo = {\n}\n  }\n}\n",
		"broken":            "agent \"a\" {\n  model = \n}\ntool \"b\" {\n}\n",
		"unclosed":          "agent \"a\" {\n\ntool \"b\" {\n}\n",
		"attrs":             "x = 1\ntool \"b\" {\n}\nx = 2\nagent \"c\" {\n}\n",
		"crlf":              "tool \"a\" {\r\n  effect = \"read\"\r\n}\r\nagent \"b\" {\r\n}\r\n",
		"no-newline-at-end": "tool \"a\" {\n}\nagent \"b\" {}",
		"blank":             "",
	}
	for name, src := range cases {
		t.Run(name, func(t *testing.T) { sameParse(t, name+".hcl", []byte(src)) })
	}
}

func TestSplitParseLargeFile(t *testing.T) {
	var b strings.Builder
	for i := 0; b.Len() < splitThreshold*2; i++ {
		fmt.Fprintf(&b, "# block %[1]d\ntool \"t%[1]d\" {\n  description = \"tool %[1]d\"\n  command {\n    argv = [\"echo\", \"${%[1]d}\"]\n  }\n}\n\n", i)
	}
	src := []byte(b.String())
	if n := len(blockStarts(src)); n < 100 {
		t.Fatalf("%d cuts in a large file", n)
	}
	sameParse(t, "big.hcl", src)
}

// FuzzSplitParse checks that parsing block by block never differs from
// parsing whole, whatever the input.
func FuzzSplitParse(f *testing.F) {
	seeds, _ := filepath.Glob("../examples/*.hcl")
	for _, s := range seeds {
		if b, err := os.ReadFile(s); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("tool \"a\" {\n  description = <<EOT\ntool \"b\" {\nEOT\n}\nagent \"c\" {\n}\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		if _, deep := tooDeep(src); deep {
			t.Skip("Parse never hands hclsyntax input nested this deep")
		}
		forceSplit(t)
		sameParse(t, "fuzz.hcl", src)
	})
}
