package stdlib

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
)

var update = flag.Bool("update", false, "rewrite docs/functions.md from the registry")

// functionTests holds the cases for every function in the registry, by name.
// TestFunctionsCovered fails when a registered function has none, so a new
// function cannot land untested (STYLE habit 7).
var functionTests = map[string][]struct {
	expr    string
	want    cty.Value
	wantErr string // a substring of the error; empty means success
}{
	"abs":          {{`abs(-3.5)`, cty.NumberFloatVal(3.5), ""}},
	"alltrue":      {{`alltrue([true, true])`, cty.True, ""}, {`alltrue([])`, cty.True, ""}, {`alltrue([true, false])`, cty.False, ""}},
	"anytrue":      {{`anytrue([false, true])`, cty.True, ""}, {`anytrue([])`, cty.False, ""}},
	"base64decode": {{`base64decode("aMOpbGxv")`, cty.StringVal("héllo"), ""}, {`base64decode("!!")`, cty.NilVal, "not valid Base64"}, {`base64decode("//4=")`, cty.NilVal, "not UTF-8"}},
	"base64encode": {{`base64encode("héllo")`, cty.StringVal("aMOpbGxv"), ""}},
	"can": {
		{`can(var.missing.attr)`, cty.False, ""},
		{`can(model.fast.pricing)`, cty.True, ""},
	},
	"ceil":         {{`ceil(1.2)`, cty.NumberIntVal(2), ""}},
	"chomp":        {{`chomp("a\n\n")`, cty.StringVal("a"), ""}},
	"chunklist":    {{`chunklist(["a","b","c"], 2)`, cty.ListVal([]cty.Value{cty.ListVal([]cty.Value{cty.StringVal("a"), cty.StringVal("b")}), cty.ListVal([]cty.Value{cty.StringVal("c")})}), ""}},
	"coalesce":     {{`coalesce(null, "b")`, cty.StringVal("b"), ""}},
	"coalescelist": {{`coalescelist([], ["x"])`, cty.TupleVal([]cty.Value{cty.StringVal("x")}), ""}},
	"compact":      {{`compact(["a", "", "b"])`, cty.ListVal([]cty.Value{cty.StringVal("a"), cty.StringVal("b")}), ""}},
	"concat":       {{`concat(["a"], ["b"])`, cty.TupleVal([]cty.Value{cty.StringVal("a"), cty.StringVal("b")}), ""}},
	"contains":     {{`contains(["a", "b"], "b")`, cty.True, ""}},
	"cost": {
		{`cost(model.fast, 1000000, 500000)`, cty.MustParseNumberVal("0.45"), ""},
		{`cost(model.fast, 1200, 300)`, cty.MustParseNumberVal("0.00036"), ""},
		{`cost(model.fast, 0, 0)`, cty.NumberIntVal(0), ""},
		{`cost(model.offline, 10, 10)`, cty.NilVal, "model has no pricing"},
		{`cost(model.nullpriced, 10, 10)`, cty.NilVal, "model has no pricing"},
		{`cost(model.halfpriced, 10, 10)`, cty.NilVal, "no output_usd_per_mtok"},
		{`cost(model.fast, -1, 0)`, cty.NilVal, "must not be negative"},
		{`cost("fast", 1, 1)`, cty.NilVal, "must be a model object"},
	},
	"csvdecode": {{`csvdecode("a,b\n1,2\n")`, cty.ListVal([]cty.Value{cty.ObjectVal(map[string]cty.Value{"a": cty.StringVal("1"), "b": cty.StringVal("2")})}), ""}},
	"distinct":  {{`distinct(["a", "b", "a"])`, cty.ListVal([]cty.Value{cty.StringVal("a"), cty.StringVal("b")}), ""}},
	"duration": {
		{`duration("30s")`, cty.NumberIntVal(30), ""},
		{`duration("5m")`, cty.NumberIntVal(300), ""},
		{`duration("1h30m")`, cty.NumberIntVal(5400), ""},
		{`duration("500ms")`, cty.NumberFloatVal(0.5), ""},
		{`duration("30")`, cty.NilVal, `invalid duration "30"`},
		{`duration("soon")`, cty.NilVal, `like "30s"`},
		{`duration("-5s")`, cty.NilVal, `invalid duration`},
	},
	"element":  {{`element(["a", "b"], 3)`, cty.StringVal("b"), ""}},
	"endswith": {{`endswith("report.md", ".md")`, cty.True, ""}, {`endswith("a", "b")`, cty.False, ""}},
	"env": {
		{`env("SYMBI_TEST_SET")`, cty.StringVal("yes"), ""},
		{`env("SYMBI_TEST_UNSET", "fallback")`, cty.StringVal("fallback"), ""},
		{`env("SYMBI_TEST_SET", "fallback")`, cty.StringVal("yes"), ""},
		{`env("SYMBI_TEST_EMPTY", "fallback")`, cty.StringVal(""), ""},
		{`env("SYMBI_TEST_UNSET")`, cty.NilVal, `"SYMBI_TEST_UNSET" is not set`},
		{`env("A", "b", "c")`, cty.NilVal, "at most one default"},
	},
	"file": {
		{`file("hello.txt")`, cty.StringVal("Hello, world!\n"), ""},
		{`file("missing.txt")`, cty.NilVal, "missing.txt"},
		{`file("binary.bin")`, cty.NilVal, "not UTF-8"},
	},
	"flatten":    {{`flatten([["a"], [], ["b", ["c"]]])`, cty.TupleVal([]cty.Value{cty.StringVal("a"), cty.StringVal("b"), cty.StringVal("c")}), ""}},
	"floor":      {{`floor(1.8)`, cty.NumberIntVal(1), ""}},
	"format":     {{`format("%s=%d", "n", 4)`, cty.StringVal("n=4"), ""}},
	"formatdate": {{`formatdate("YYYY-MM-DD", "2026-12-02T13:00:00Z")`, cty.StringVal("2026-12-02"), ""}},
	"formatlist": {{`formatlist("-%s", ["a", "b"])`, cty.ListVal([]cty.Value{cty.StringVal("-a"), cty.StringVal("-b")}), ""}},
	"glob_match": {
		{`glob_match("read_*", "read_file")`, cty.True, ""},
		{`glob_match("read_?", "read_ab")`, cty.False, ""},
		{`glob_match("/etc/*", "/etc/passwd")`, cty.True, ""},
		{`glob_match("/etc/*", "/etc/ssh/config")`, cty.False, ""},
		{`glob_match("[", "x")`, cty.NilVal, "syntax error in pattern"},
	},
	"indent": {{`indent(2, "a\nb")`, cty.StringVal("a\n  b"), ""}},
	"index": {
		{`index(["a", "b"], "b")`, cty.NumberIntVal(1), ""},
		{`index(["a"], "z")`, cty.NilVal, "not found"},
		{`index([], "z")`, cty.NilVal, "empty list"},
		{`index("ab", "a")`, cty.NilVal, "must be a list or tuple"},
	},
	"join":       {{`join(",", ["a", "b"])`, cty.StringVal("a,b"), ""}},
	"jsondecode": {{`jsondecode("{\"a\":1}")`, cty.ObjectVal(map[string]cty.Value{"a": cty.NumberIntVal(1)}), ""}},
	"jsonencode": {{`jsonencode({a = 1})`, cty.StringVal(`{"a":1}`), ""}},
	"keys":       {{`keys({b = 1, a = 2})`, cty.TupleVal([]cty.Value{cty.StringVal("a"), cty.StringVal("b")}), ""}},
	"length": {
		{`length("héllo")`, cty.NumberIntVal(5), ""},
		{`length(["a", "b"])`, cty.NumberIntVal(2), ""},
		{`length({a = 1})`, cty.NumberIntVal(1), ""},
		{`length(1)`, cty.NilVal, "must be a string or a collection"},
	},
	"log":    {{`log(8, 2)`, cty.NumberIntVal(3), ""}},
	"lookup": {{`lookup({a = "x"}, "b", "d")`, cty.StringVal("d"), ""}},
	"lower":  {{`lower("ABC")`, cty.StringVal("abc"), ""}},
	"max":    {{`max(1, 5, 3)`, cty.NumberIntVal(5), ""}},
	"merge":  {{`merge({a = 1}, {a = 2, b = 3})`, cty.ObjectVal(map[string]cty.Value{"a": cty.NumberIntVal(2), "b": cty.NumberIntVal(3)}), ""}},
	"min":    {{`min(4, 2)`, cty.NumberIntVal(2), ""}},
	"one": {
		{`one(["a"])`, cty.StringVal("a"), ""},
		{`one(tolist([]))`, cty.NullVal(cty.DynamicPseudoType), ""},
		{`one(["a", "b"])`, cty.NilVal, "at most one element"},
	},
	"parseint":        {{`parseint("ff", 16)`, cty.NumberIntVal(255), ""}},
	"pow":             {{`pow(2, 10)`, cty.NumberIntVal(1024), ""}},
	"range":           {{`range(3)`, cty.ListVal([]cty.Value{cty.NumberIntVal(0), cty.NumberIntVal(1), cty.NumberIntVal(2)}), ""}},
	"regex":           {{`regex("[0-9]+", "ab12c")`, cty.StringVal("12"), ""}},
	"regexall":        {{`regexall("[0-9]", "a1b2")`, cty.ListVal([]cty.Value{cty.StringVal("1"), cty.StringVal("2")}), ""}},
	"replace":         {{`replace("a-b-c", "-", "+")`, cty.StringVal("a+b+c"), ""}, {`replace("v12", "/([a-z])([0-9]+)/", "$2$1")`, cty.StringVal("12v"), ""}},
	"reverse":         {{`reverse(["a", "b"])`, cty.TupleVal([]cty.Value{cty.StringVal("b"), cty.StringVal("a")}), ""}},
	"setintersection": {{`setintersection(["a", "b"], ["b"])`, cty.SetVal([]cty.Value{cty.StringVal("b")}), ""}},
	"setproduct":      {{`length(setproduct(["a", "b"], ["c"]))`, cty.NumberIntVal(2), ""}},
	"setsubtract":     {{`setsubtract(["a", "b"], ["b"])`, cty.SetVal([]cty.Value{cty.StringVal("a")}), ""}},
	"setunion":        {{`setunion(["a"], ["b"])`, cty.SetVal([]cty.Value{cty.StringVal("a"), cty.StringVal("b")}), ""}},
	"sha256":          {{`sha256("abc")`, cty.StringVal("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"), ""}},
	"signum":          {{`signum(-4)`, cty.NumberIntVal(-1), ""}},
	"slice":           {{`slice(["a", "b", "c"], 1, 3)`, cty.TupleVal([]cty.Value{cty.StringVal("b"), cty.StringVal("c")}), ""}},
	"sort":            {{`sort(["b", "a"])`, cty.ListVal([]cty.Value{cty.StringVal("a"), cty.StringVal("b")}), ""}},
	"split":           {{`split(",", "a,b")`, cty.ListVal([]cty.Value{cty.StringVal("a"), cty.StringVal("b")}), ""}},
	"startswith":      {{`startswith("read_file", "read_")`, cty.True, ""}},
	"strcontains":     {{`strcontains("read_file", "_fi")`, cty.True, ""}, {`strcontains("a", "b")`, cty.False, ""}},
	"strrev":          {{`strrev("abc")`, cty.StringVal("cba"), ""}},
	"sum":             {{`sum([1, 2.5, 3])`, cty.NumberFloatVal(6.5), ""}, {`sum([])`, cty.NilVal, "empty"}, {`sum(["x"])`, cty.NilVal, "not a number"}},
	"substr":          {{`substr("hello", 1, 3)`, cty.StringVal("ell"), ""}},
	"templatefile": {
		{`templatefile("greeting.tmpl", {name = "ada", tags = ["x", "y"]})`, cty.StringVal("Hello, ADA! #x #y"), ""},
		{`templatefile("number.tmpl", {n = 3})`, cty.NumberIntVal(3), ""},
		{`templatefile("greeting.tmpl", {name = "ada"})`, cty.NilVal, `vars has no key "tags"`},
		{`templatefile("greeting.tmpl", "x")`, cty.NilVal, "must be a map or an object"},
		{`templatefile("recursive.tmpl", {})`, cty.NilVal, "templatefile"},
		{`templatefile("missing.tmpl", {})`, cty.NilVal, "missing.tmpl"},
	},
	"timeadd":  {{`timeadd("2026-01-01T00:00:00Z", "90m")`, cty.StringVal("2026-01-01T01:30:00Z"), ""}},
	"title":    {{`title("hello world")`, cty.StringVal("Hello World"), ""}},
	"tobool":   {{`tobool("true")`, cty.True, ""}},
	"tolist":   {{`tolist(["a"])`, cty.ListVal([]cty.Value{cty.StringVal("a")}), ""}},
	"tomap":    {{`tomap({a = "b"})`, cty.MapVal(map[string]cty.Value{"a": cty.StringVal("b")}), ""}},
	"tonumber": {{`tonumber("42")`, cty.NumberIntVal(42), ""}, {`tonumber("x")`, cty.NilVal, "cannot convert"}},
	"toset":    {{`toset(["a", "a"])`, cty.SetVal([]cty.Value{cty.StringVal("a")}), ""}},
	"tostring": {{`tostring(5)`, cty.StringVal("5"), ""}},
	"tokens": {
		{`tokens("")`, cty.NumberIntVal(0), ""},
		{`tokens("abcdefgh")`, cty.NumberIntVal(2), ""},
	},
	"trim":       {{`trim("--a--", "-")`, cty.StringVal("a"), ""}},
	"trimprefix": {{`trimprefix("model.fast", "model.")`, cty.StringVal("fast"), ""}},
	"trimspace":  {{`trimspace("  a \n")`, cty.StringVal("a"), ""}},
	"trimsuffix": {{`trimsuffix("a.md", ".md")`, cty.StringVal("a"), ""}},
	"try":        {{`try(var.missing.attr, "fallback")`, cty.StringVal("fallback"), ""}, {`try(var.missing.attr)`, cty.NilVal, "no expression succeeded"}},
	"urlencode":  {{`urlencode("a b&c")`, cty.StringVal("a+b%26c"), ""}},
	"upper":      {{`upper("abc")`, cty.StringVal("ABC"), ""}},
	"values":     {{`values({a = 1, b = 2})`, cty.TupleVal([]cty.Value{cty.NumberIntVal(1), cty.NumberIntVal(2)}), ""}},
	"zipmap":     {{`zipmap(["a"], [1])`, cty.ObjectVal(map[string]cty.Value{"a": cty.NumberIntVal(1)}), ""}},
}

func testOptions() Options {
	env := map[string]string{"SYMBI_TEST_SET": "yes", "SYMBI_TEST_EMPTY": ""}
	return Options{
		BaseDir: "testdata",
		LookupEnv: func(name string) (string, bool) {
			v, ok := env[name]
			return v, ok
		},
	}
}

// testScope is the configuration scope the expressions in functionTests see.
func testScope(fns map[string]function.Function) *hcl.EvalContext {
	// Prices parsed from decimal text, as HCL reads a literal 0.15.
	pricing := func(in, out string) cty.Value {
		return cty.ObjectVal(map[string]cty.Value{
			"input_usd_per_mtok":  cty.MustParseNumberVal(in),
			"output_usd_per_mtok": cty.MustParseNumberVal(out),
		})
	}
	return &hcl.EvalContext{
		Functions: fns,
		Variables: map[string]cty.Value{
			"var": cty.EmptyObjectVal,
			"model": cty.ObjectVal(map[string]cty.Value{
				"fast":       cty.ObjectVal(map[string]cty.Value{"name": cty.StringVal("gpt-4o-mini"), "pricing": pricing("0.15", "0.60")}),
				"offline":    cty.ObjectVal(map[string]cty.Value{"name": cty.StringVal("offline")}),
				"nullpriced": cty.ObjectVal(map[string]cty.Value{"pricing": cty.NullVal(cty.DynamicPseudoType)}),
				"halfpriced": cty.ObjectVal(map[string]cty.Value{"pricing": cty.ObjectVal(map[string]cty.Value{"input_usd_per_mtok": cty.NumberIntVal(1)})}),
				"unknown":    cty.ObjectVal(map[string]cty.Value{"pricing": cty.UnknownVal(cty.DynamicPseudoType)}),
			}),
		},
	}
}

func eval(t *testing.T, ctx *hcl.EvalContext, src string) (cty.Value, error) {
	t.Helper()
	expr, diags := hclsyntax.ParseExpression([]byte(src), "test.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatalf("parsing %s: %s", src, diags.Error())
	}
	v, diags := expr.Value(ctx)
	if diags.HasErrors() {
		return cty.NilVal, diags
	}
	return v, nil
}

func TestFunctions(t *testing.T) {
	ctx := testScope(Functions(testOptions()))
	for name, cases := range functionTests {
		for i, tc := range cases {
			t.Run(fmt.Sprintf("%s/%d", name, i), func(t *testing.T) {
				got, err := eval(t, ctx, tc.expr)
				if tc.wantErr != "" {
					if err == nil {
						t.Fatalf("%s = %#v, want an error containing %q", tc.expr, got, tc.wantErr)
					}
					if !strings.Contains(err.Error(), tc.wantErr) {
						t.Fatalf("%s: error %q does not contain %q", tc.expr, err, tc.wantErr)
					}
					return
				}
				if err != nil {
					t.Fatalf("%s: %s", tc.expr, err)
				}
				if !got.RawEquals(tc.want) {
					t.Fatalf("%s = %#v, want %#v", tc.expr, got, tc.want)
				}
			})
		}
	}
}

// TestFunctionsCovered is the meta-test: every registered function has a
// description and test cases, and every test case names a registered function.
func TestFunctionsCovered(t *testing.T) {
	registered := map[string]bool{}
	for _, f := range Registry(testOptions()) {
		registered[f.Name] = true
		if strings.TrimSpace(f.Description) == "" {
			t.Errorf("function %s has no description", f.Name)
		}
		if len(functionTests[f.Name]) == 0 {
			t.Errorf("function %s has no test cases in functionTests", f.Name)
		}
	}
	for name := range functionTests {
		if !registered[name] {
			t.Errorf("functionTests has cases for %s, which is not registered", name)
		}
	}
}

func TestRegistrySortedAndComplete(t *testing.T) {
	reg := Registry(Options{})
	fns := Functions(Options{})
	if len(reg) != len(fns) {
		t.Fatalf("Registry has %d functions, Functions %d: a name is registered twice", len(reg), len(fns))
	}
	for i := 1; i < len(reg); i++ {
		if reg[i-1].Name >= reg[i].Name {
			t.Fatalf("registry not sorted: %s before %s", reg[i-1].Name, reg[i].Name)
		}
	}
}

func TestFileResolvesAgainstBaseDirAndReportsReads(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "p.md"), []byte("prompt"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "t.tmpl"), []byte("${file(\"p.md\")}!"), 0o600); err != nil {
		t.Fatal(err)
	}
	var reads []string
	opts := Options{BaseDir: dir, OnRead: func(p string, b []byte) { reads = append(reads, fmt.Sprintf("%s=%s", p, b)) }}
	ctx := testScope(Functions(opts))
	got, err := eval(t, ctx, `templatefile("t.tmpl", {})`)
	if err != nil {
		t.Fatal(err)
	}
	if got.AsString() != "prompt!" {
		t.Fatalf("got %q", got.AsString())
	}
	want := []string{filepath.Join(dir, "t.tmpl") + `=${file("p.md")}!`, filepath.Join(dir, "p.md") + "=prompt"}
	if fmt.Sprint(reads) != fmt.Sprint(want) {
		t.Fatalf("reads = %q, want %q", reads, want)
	}
}

func TestEnvUnsetIsTyped(t *testing.T) {
	f := Functions(Options{LookupEnv: func(string) (string, bool) { return "", false }})["env"]
	_, err := f.Call([]cty.Value{cty.StringVal("NOPE")})
	var unset *EnvUnsetError
	if !errors.As(err, &unset) || unset.Name != "NOPE" {
		t.Fatalf("err = %v, want *EnvUnsetError naming NOPE", err)
	}
}

func TestCostErrorsAndUnknowns(t *testing.T) {
	ctx := testScope(Functions(Options{}))
	model := ctx.Variables["model"]
	cost := ctx.Functions["cost"]
	_, err := cost.Call([]cty.Value{model.GetAttr("offline"), cty.NumberIntVal(1), cty.NumberIntVal(1)})
	if !errors.Is(err, ErrNoPricing) {
		t.Fatalf("err = %v, want ErrNoPricing", err)
	}
	v, err := cost.Call([]cty.Value{model.GetAttr("unknown"), cty.NumberIntVal(1), cty.NumberIntVal(1)})
	if err != nil || v.IsKnown() {
		t.Fatalf("cost with unknown pricing = %#v, %v; want an unknown number", v, err)
	}
	v, err = cost.Call([]cty.Value{cty.UnknownVal(cty.DynamicPseudoType), cty.NumberIntVal(1), cty.NumberIntVal(1)})
	if err != nil || v.IsKnown() {
		t.Fatalf("cost with unknown model = %#v, %v; want an unknown number", v, err)
	}
}

func TestParseDuration(t *testing.T) {
	if d, err := ParseDuration("1h30m"); err != nil || d.Minutes() != 90 {
		t.Fatalf("ParseDuration(1h30m) = %v, %v", d, err)
	}
	for _, bad := range []string{"", "30", "5 minutes", "-1s"} {
		if _, err := ParseDuration(bad); !errors.Is(err, ErrBadDuration) {
			t.Errorf("ParseDuration(%q) err = %v, want ErrBadDuration", bad, err)
		}
	}
}

func TestSignature(t *testing.T) {
	got := map[string]string{}
	for _, f := range Registry(Options{}) {
		got[f.Name] = f.Signature()
	}
	for name, want := range map[string]string{
		"env":      "env(name string, default... string)",
		"cost":     "cost(model any, prompt_tokens number, completion_tokens number)",
		"try":      "try(expressions... expression)",
		"duration": "duration(s string)",
	} {
		if got[name] != want {
			t.Errorf("%s signature = %q, want %q", name, got[name], want)
		}
	}
}

// renderDocs is docs/functions.md: generated, so it cannot drift from the registry.
func renderDocs() []byte {
	var b bytes.Buffer
	b.WriteString("# Functions\n\n")
	b.WriteString("Every expression in a symbi configuration can call these functions. This file is generated from\n")
	b.WriteString("the registry in `stdlib/`; regenerate it with `go test ./stdlib -update`.\n\n")
	b.WriteString("Paths given to `file` and `templatefile` are relative to the directory of the file that calls them.\n")
	b.WriteString("An expression that calls `env` is deferred: the plan keeps its source text, and the engine evaluates it\n")
	b.WriteString("at run time, so no secret enters a plan. Types are written as in a `variable` block; `any` accepts any value; `expression` means the\n")
	b.WriteString("argument is evaluated by the function itself (`try`, `can`).\n\n")
	b.WriteString("| function | signature |\n|---|---|\n")
	reg := Registry(Options{})
	for _, f := range reg {
		fmt.Fprintf(&b, "| [`%s`](#%s) | `%s` |\n", f.Name, f.Name, f.Signature())
	}
	for _, f := range reg {
		fmt.Fprintf(&b, "\n## %s\n\n`%s`\n\n%s\n", f.Name, f.Signature(), f.Description)
	}
	return b.Bytes()
}

func TestDocsMatchRegistry(t *testing.T) {
	const path = "../docs/functions.md"
	want := renderDocs()
	if *update {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%s: %v (run go test ./stdlib -update)", path, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s does not match the registry; run go test ./stdlib -update", path)
	}
}

func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"30s", "5m", "1h30m", "500ms", "30", "", "-1s", "1e9h"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDuration(s)
		if err == nil && d < 0 {
			t.Fatalf("ParseDuration(%q) = %v, a negative duration", s, d)
		}
		if err != nil && !errors.Is(err, ErrBadDuration) {
			t.Fatalf("ParseDuration(%q) error %v is not ErrBadDuration", s, err)
		}
	})
}

// FuzzMatchGlob checks MatchGlob against a regular expression built from
// the pattern by the grammar path.Match documents (MatchGlob promises its
// semantics): * and ? never match '/', a class matches any rune in its
// ranges, and a malformed pattern is an ErrBadPattern error, whatever the
// name. It also checks that a name matches itself escaped.
func FuzzMatchGlob(f *testing.F) {
	for _, s := range [][2]string{
		{"read_*", "read_file"}, {"[", "x"}, {"a?c", "abc"}, {"a/*", "a/b/c"}, {"*", "a/b"},
		{"[^a-c]x", "dx"}, {"[a-]", "a"}, {`[\]]`, "]"}, {"[]]", "]"}, {`a\`, "a"}, {"[z-a]", "m"},
		{"[é-ü]?", "ñ/"}, {"\\*", "*"}, {"*[", "x"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, s string) {
		ok, err := MatchGlob(pattern, s)
		if err != nil && (ok || !errors.Is(err, path.ErrBadPattern)) {
			t.Fatalf("MatchGlob(%q, %q) = %v, %v; an error must be a non-match wrapping path.ErrBadPattern", pattern, s, ok, err)
		}
		if got, err := MatchGlob(escapeGlob(s), s); !got || err != nil {
			t.Fatalf("MatchGlob(%q, %q) = %v, %v: a name must match itself escaped", escapeGlob(s), s, got, err)
		}
		if !utf8.ValidString(pattern) || !utf8.ValidString(s) {
			return // regexp reads invalid UTF-8 its own way
		}
		re, valid := globRegexp(pattern)
		if valid != (err == nil) {
			t.Fatalf("MatchGlob(%q, %q) error %v; the grammar says valid=%v", pattern, s, err, valid)
		}
		if valid {
			if want := regexp.MustCompile(re).MatchString(s); ok != want {
				t.Fatalf("MatchGlob(%q, %q) = %v; %s says %v", pattern, s, ok, re, want)
			}
		}
	})
}

// escapeGlob escapes every byte of s, so the pattern matches s only.
func escapeGlob(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		b.WriteByte('\\')
		b.WriteByte(s[i])
	}
	return b.String()
}

// globRegexp translates a path.Match pattern to an anchored regular
// expression by path.Match's documented grammar, or reports it malformed:
//
//	term:            '*' | '?' | '[' [ '^' ] { character-range } ']' | c | '\\' c
//	character-range: c | '\\' c | lo '-' hi   (c != '\\', '-', ']'; the class is non-empty)
func globRegexp(pattern string) (string, bool) {
	var re strings.Builder
	re.WriteString(`\A(?:`)
	lit := func(r rune) { re.WriteString(regexp.QuoteMeta(string(r))) }
	p := []rune(pattern)
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '*':
			re.WriteString(`[^/]*`)
		case '?':
			re.WriteString(`[^/]`)
		case '\\':
			if i++; i == len(p) {
				return "", false
			}
			lit(p[i])
		case '[':
			i++
			negated := i < len(p) && p[i] == '^'
			if negated {
				i++
			}
			// rangeChar reads c or '\\' c at p[i].
			rangeChar := func() (rune, bool) {
				if i == len(p) || p[i] == '-' || p[i] == ']' {
					return 0, false
				}
				if p[i] == '\\' {
					if i++; i == len(p) {
						return 0, false
					}
				}
				i++
				return p[i-1], true
			}
			var ranges [][2]rune
			for {
				if i < len(p) && p[i] == ']' && len(ranges) > 0 {
					break
				}
				lo, ok := rangeChar()
				if !ok {
					return "", false
				}
				hi := lo
				if i < len(p) && p[i] == '-' {
					i++
					if hi, ok = rangeChar(); !ok {
						return "", false
					}
				}
				if i == len(p) {
					return "", false // no closing ]
				}
				ranges = append(ranges, [2]rune{lo, hi})
			}
			// A reversed range matches nothing, which a regexp class cannot
			// say: write the class as an alternation of runes in ranges.
			var class strings.Builder
			for _, r := range ranges {
				if r[0] <= r[1] {
					fmt.Fprintf(&class, `\x{%x}-\x{%x}`, r[0], r[1])
				}
			}
			switch {
			case class.Len() == 0 && negated:
				re.WriteString(`[\x{0}-\x{10ffff}]`)
			case class.Len() == 0:
				re.WriteString(`[^\x{0}-\x{10ffff}]`)
			case negated:
				re.WriteString(`[^` + class.String() + `]`)
			default:
				re.WriteString(`[` + class.String() + `]`)
			}
		default:
			lit(p[i])
		}
	}
	re.WriteString(`)\z`)
	return re.String(), true
}

// BenchmarkFunctions measures building the table, which the compiler does for
// every configuration file.
func BenchmarkFunctions(b *testing.B) {
	for b.Loop() {
		Functions(Options{BaseDir: "testdata"})
	}
}
