package hclfmt

import (
	"bytes"
	"io/fs"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"
)

// repoHCL returns every .hcl file of the repository (examples, test data).
func repoHCL(t testing.TB) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".hcl") {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			files[path] = b
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 20 {
		t.Fatalf("only %d .hcl files found under the repository", len(files))
	}
	return files
}

// unformatted spoils a file's layout: indentation gone, spaces doubled
// around '=' and inside brackets.
func unformatted(src []byte) []byte {
	var b bytes.Buffer
	for _, line := range strings.Split(string(src), "\n") {
		line = strings.TrimLeft(line, " \t")
		line = strings.Replace(line, " = ", "  =   ", 1)
		line = strings.ReplaceAll(line, "[", "[ ")
		b.WriteString(line + "\n")
	}
	return b.Bytes()
}

func TestFormatIsHCLWriteFormat(t *testing.T) {
	for path, src := range repoHCL(t) {
		for _, in := range [][]byte{src, unformatted(src)} {
			if got, want := Format(in), hclwrite.Format(in); !bytes.Equal(got, want) {
				t.Errorf("%s: Format differs from hclwrite.Format:\n--- got\n%s\n--- want\n%s", path, got, want)
			}
		}
	}
}

func TestTokensForValueIsHCLWrite(t *testing.T) {
	n, _ := new(big.Float).SetString("12345678901234567890.125")
	values := []cty.Value{
		cty.NullVal(cty.String), cty.True, cty.False,
		cty.NumberIntVal(42), cty.NumberFloatVal(-0.5), cty.NumberVal(n),
		cty.StringVal(""), cty.StringVal("plain"), cty.StringVal("quote \" backslash \\ newline \n tab \t"),
		cty.StringVal("${interp} %{directive} $${kept}"), cty.StringVal("unicode é 日本 \u202e \x00 \x7f"),
		cty.ListValEmpty(cty.String), cty.ListVal([]cty.Value{cty.StringVal("a"), cty.StringVal("b")}),
		cty.SetVal([]cty.Value{cty.NumberIntVal(1), cty.NumberIntVal(2)}),
		cty.TupleVal([]cty.Value{cty.StringVal("a"), cty.NumberIntVal(1), cty.True}),
		cty.MapVal(map[string]cty.Value{"b": cty.StringVal("x"), "a-b": cty.StringVal("y"), "not an ident": cty.StringVal("z")}),
		cty.EmptyObjectVal,
		cty.ObjectVal(map[string]cty.Value{
			"name":   cty.StringVal("agent"),
			"nested": cty.ObjectVal(map[string]cty.Value{"list": cty.ListVal([]cty.Value{cty.NumberIntVal(1)}), "long_attribute_name": cty.True}),
			"1bad":   cty.NullVal(cty.Bool),
		}),
	}
	for _, v := range values {
		if got, want := TokensForValue(v).Bytes(), hclwrite.TokensForValue(v).Bytes(); !bytes.Equal(got, want) {
			t.Errorf("%#v: TokensForValue gives\n%s\nhclwrite gives\n%s", v, got, want)
		}
	}
}

// FuzzFormat: any input, valid HCL or not, formats as hclwrite.Format
// formats it.
func FuzzFormat(f *testing.F) {
	for _, src := range repoHCL(f) {
		f.Add(src)
	}
	f.Add([]byte("a = {\nb = [1,\n2]\n  # c\n}\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		if got, want := Format(src), hclwrite.Format(src); !bytes.Equal(got, want) {
			t.Fatalf("Format(%q) = %q, hclwrite.Format %q", src, got, want)
		}
	})
}
