package symbi_test

// The layering of the module, stated once and enforced, as Go's own
// src/go/build/deps_test.go does for the standard library. A new import
// between symbi's packages fails TestDependencies, naming the edge, until
// the table below allows it; the import rules each doc.go writes in words
// must agree with the table (TestDocImportRules).

import (
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/symbi-dev/symbi"

// allowed is, for every package of the module (by its path inside the
// module), the module's packages it may import. Data flows one way: files →
// lang → interp → plan → engine → journal, over the leaves.
var allowed = map[string][]string{
	// Test-only packages: this one and the end-to-end suite, which drives
	// the binary.
	".":   nil,
	"e2e": nil,

	// Leaves that import no other symbi package.
	"lang": nil, // syntax and decoded blocks, nothing evaluated
	// The contract between the compiler and the runtime; its JSON written
	// by generated code over internal/jsonenc.
	"plan":      {"internal/jsonenc"},
	"seal":      nil,
	"stdlib":    nil, // the functions
	"knowledge": nil,
	"provider":  nil, // the model interface
	// Gate decisions in OPA's decision-log format: encoding and appending.
	"decisionlog": nil,

	// Small shared helpers: the one retry schedule of models and tools, and
	// the part of hclwrite that fmt and the REPL use (hclwrite links go-cmp).
	"internal/backoff": nil,
	"internal/hclfmt":  nil,
	// The executable's code dropped from the process once main starts.
	"internal/exepages": nil,
	"internal/sibling":  nil,
	// JSON written as encoding/json writes it, without reflection: the
	// appenders, and the generator of a package's encoders over them.
	"internal/jsonenc":             nil,
	"internal/jsongen":             {"internal/jsonenc"},
	"internal/jsongen/cmd/jsongen": {"internal/jsongen"},

	// What a plan needs at run time, beside the plan.
	"plan/eval": {"plan", "stdlib"},
	// The tool lock file: read by the compiler, checked by the toolbox,
	// written by symbi lock.
	"lockfile": {"plan"},

	// Leaves over plans.
	"policy": {"plan", "seal"},
	// The OPA engine, registered with policy by whoever imports it: the
	// helper symbi-opa, symbi-temporal, and tests.
	"policy/opa": {"plan", "policy"},
	// The client of the symbi-opa helper and the helper's server loop:
	// symbi decides Rego through it, without linking OPA.
	"policy/opaproc":      {"internal/sibling", "plan", "policy"},
	"budget":              {"plan", "provider"},
	"routing":             {"plan"},
	"convo":               {"plan", "provider", "stdlib"},
	"builtins":            {"internal/backoff", "knowledge", "lockfile", "plan", "policy", "stdlib"},
	"journal":             {"budget", "policy", "provider", "seal"},
	"journal/render":      {"budget", "journal", "policy"},
	"provider/openai":     {"internal/backoff", "plan", "provider"},
	"provider/anthropic":  {"plan", "provider"},
	"provider/scripted":   {"plan", "provider", "stdlib"},
	"provider/fakeserver": {"provider", "stdlib"},
	"provider/cassette":   {"provider"},

	// The compiler.
	"interp": {"budget", "builtins", "lang", "lockfile", "plan", "policy", "stdlib"},

	// OpenTelemetry's SDK and exporters, set up from the plan's telemetry
	// block and the environment; only the command line starts it.
	"telemetry": {"plan", "plan/eval"},

	// The runtime: it reads plans, never the compiler (no lang, no interp).
	"engine": {"budget", "builtins", "convo", "decisionlog", "journal", "knowledge", "plan", "plan/eval", "policy",
		"provider", "provider/anthropic", "provider/openai", "provider/scripted", "routing", "seal", "stdlib",
		"engine/internal/answer", "engine/internal/bestofn", "engine/internal/estimate", "engine/internal/planexec",
		"engine/internal/prehydrate", "engine/internal/progress", "engine/internal/redact", "engine/internal/reflection"},
	// The engine's pure parts, each a package of its own; the drivers that
	// need a run stay in the engine.
	"engine/internal/answer":     nil,
	"engine/internal/progress":   {"plan"},
	"engine/internal/reflection": {"engine/internal/answer", "plan"},
	"engine/internal/planexec":   {"engine/internal/answer", "provider"},
	"engine/internal/bestofn":    {"budget", "engine/internal/answer", "journal", "plan", "plan/eval"},
	"engine/internal/prehydrate": {"stdlib"},
	"engine/internal/msgkey":     {"provider"},
	"engine/internal/estimate":   {"convo", "engine/internal/msgkey", "provider", "stdlib"},
	"engine/internal/redact":     {"engine/internal/msgkey", "provider"},

	// symbi test: test files run through the engine, between the command
	// line and the engine and compiler.
	"symbitest": {"engine", "interp", "journal", "lang", "plan", "policy", "provider", "provider/cassette", "provider/scripted", "stdlib"},

	// The REPL core and the command line, over everything.
	"repl":      {"budget", "builtins", "engine", "internal/hclfmt", "interp", "journal", "journal/render", "plan", "plan/eval", "policy", "stdlib"},
	"cmd/symbi": {"decisionlog", "engine", "internal/exepages", "internal/hclfmt", "internal/sibling", "interp", "journal", "journal/render", "lang", "lockfile", "plan", "policy", "policy/opaproc", "provider/cassette", "repl", "symbitest", "telemetry", "temporal/contract"},

	// The Temporal runtime: the workflow runs the engine, never the
	// compiler; what symbi shares with it (contract) has no SDK. Its own
	// binary links the SDK, so symbi's start-up does not pay for it.
	"temporal/contract": {"budget", "builtins", "engine", "journal", "plan", "policy", "seal"},
	"temporal":          {"builtins", "engine", "journal", "knowledge", "plan", "policy", "provider", "seal", "temporal/contract"},
	// The OPA helper: policy/opa served over stdin and stdout.
	"cmd/symbi-opa":      {"policy/opa", "policy/opaproc"},
	"cmd/symbi-temporal": {"engine", "journal", "policy", "policy/opa", "temporal", "temporal/contract"},
}

// thirdParty holds modules that are large or costly at init, or that only
// one layer may use: the packages that may import each directly, and those
// that must not depend on it at all, even through another package.
var thirdParty = []struct {
	module    string
	importers []string
	unreached []string
}{
	// OPA only in its engine, linked by the symbi-opa helper, symbi-temporal
	// and tests: symbi itself never links it (policy/opaproc talks to the
	// helper), so no command pays for OPA's package init.
	{"github.com/open-policy-agent/opa", []string{"policy/opa"},
		[]string{"cmd/symbi", "repl", "symbitest", "interp", "engine", "builtins", "journal", "policy", "policy/opaproc", "lang", "plan", "plan/eval", "stdlib", "budget", "routing", "convo", "knowledge", "seal", "provider", "provider/openai", "provider/scripted", "provider/fakeserver"}},
	{"github.com/cedar-policy/cedar-go", []string{"policy"},
		[]string{"lang", "plan", "plan/eval", "stdlib", "budget", "routing", "convo", "knowledge", "seal", "provider", "provider/openai", "provider/scripted", "provider/fakeserver"}},
	{"github.com/modelcontextprotocol/go-sdk", []string{"builtins"},
		append([]string{"lang", "lockfile", "plan", "plan/eval", "stdlib", "policy", "budget", "journal", "routing", "convo", "knowledge", "seal", "provider", "provider/openai", "provider/scripted", "provider/fakeserver"}, enginePure...)},
	{"github.com/google/jsonschema-go", []string{"builtins"},
		append([]string{"lang", "plan", "plan/eval", "stdlib", "policy", "budget", "journal", "routing", "convo", "knowledge", "seal", "provider", "provider/openai", "provider/scripted", "provider/fakeserver"}, enginePure...)},
	{"go.etcd.io/bbolt", []string{"knowledge"},
		append([]string{"lang", "plan", "plan/eval", "stdlib", "policy", "budget", "journal", "routing", "convo", "seal", "provider", "provider/openai", "provider/scripted", "provider/fakeserver"}, enginePure...)},
	{"github.com/sashabaranov/go-openai", []string{"provider/openai", "provider/fakeserver"},
		append([]string{"lang", "plan", "plan/eval", "stdlib", "interp", "policy", "budget", "journal", "builtins", "routing", "convo", "knowledge", "seal", "provider", "provider/anthropic", "provider/scripted"}, enginePure...)},
	// The official Anthropic SDK no longer: provider/anthropic is symbi's
	// own client of the Messages API, since the SDK and what it pulls in
	// cost every process 12 MB of binary, 2 MiB of peak and 5 % of a
	// one-round run (provider/anthropic's doc). Nothing may bring it back
	// unnoticed.
	{"github.com/anthropics/anthropic-sdk-go", nil, []string{"cmd/symbi", "provider/anthropic"}},
	{"github.com/hashicorp/hcl/v2", []string{"lang", "lockfile", "stdlib", "plan/eval", "interp", "internal/hclfmt", "repl", "symbitest", "cmd/symbi"},
		[]string{"plan", "seal", "provider", "budget", "routing", "knowledge"}},
	// The OpenTelemetry SDK and its console exporters are set up by
	// telemetry alone; the engine emits through the API
	// (go.opentelemetry.io/otel/trace and metric), and builtins and the
	// providers only pass the trace context on. gRPC and the Prometheus
	// client reach nothing of symbi, cmd/symbi included: grpc links
	// golang.org/x/net/trace, whose templates keep the linker from dropping
	// unused methods anywhere in the binary (+26 MB), and the Prometheus
	// client's package init is most of what telemetry would add to start-up
	// (docs/benchmarks.md). telemetry speaks OTLP over http/protobuf and gRPC
	// with net/http, and writes Prometheus's text format itself.
	{"go.opentelemetry.io/otel/sdk", []string{"telemetry"},
		append([]string{"engine", "builtins", "provider", "provider/openai", "provider/anthropic", "policy", "journal", "repl", "interp", "lang", "plan"}, enginePure...)},
	{"go.opentelemetry.io/otel/exporters", []string{"telemetry"},
		append([]string{"engine", "builtins", "provider", "provider/openai", "provider/anthropic", "policy", "journal", "repl", "interp", "lang", "plan"}, enginePure...)},
	// The OTLP message types, and the protobuf runtime they need, are
	// linked by no command: telemetry writes spans and metrics field by
	// field with protowire (tests hold both to proto.Marshal), and their
	// package init was 0.2-0.3 ms of every process (docs/benchmarks.md).
	{"go.opentelemetry.io/proto/otlp", nil, []string{"cmd/symbi", "telemetry"}},
	{"google.golang.org/protobuf/proto", nil, []string{"cmd/symbi", "telemetry"}},
	{"google.golang.org/grpc", nil,
		append([]string{"cmd/symbi", "repl", "temporal/contract", "telemetry", "engine", "builtins", "provider", "provider/openai", "provider/anthropic", "policy", "journal", "interp", "lang", "plan"}, enginePure...)},
	{"github.com/prometheus/client_golang", nil,
		append([]string{"cmd/symbi", "telemetry", "engine", "builtins", "provider", "provider/openai", "provider/anthropic", "policy", "journal", "repl", "interp", "lang", "plan"}, enginePure...)},
	// The Temporal SDK (and the grpc it brings) only in the Temporal
	// runtime and its binary: symbi itself never links it.
	{"go.temporal.io/sdk", []string{"temporal", "cmd/symbi-temporal"},
		append([]string{"cmd/symbi", "repl", "temporal/contract", "lang", "interp", "plan", "plan/eval", "stdlib", "policy", "budget", "journal", "journal/render", "builtins", "routing", "convo", "knowledge", "seal", "provider", "provider/openai", "provider/anthropic", "provider/scripted", "provider/fakeserver", "engine"}, enginePure...)},
	// Terminal IO and flags belong to the command line alone.
	{"github.com/spf13/cobra", []string{"cmd/symbi", "cmd/symbi-temporal"}, nil},
	{"github.com/ergochat/readline", []string{"cmd/symbi"}, nil},
	{"golang.org/x/term", []string{"cmd/symbi"}, nil},
}

// enginePure are the engine's pure parts: they reach no tool, store or
// wire format, so none of them may depend on the MCP SDK, jsonschema, bbolt
// or go-openai.
var enginePure = []string{"engine/internal/answer", "engine/internal/bestofn", "engine/internal/estimate",
	"engine/internal/msgkey", "engine/internal/planexec", "engine/internal/prehydrate", "engine/internal/progress",
	"engine/internal/redact", "engine/internal/reflection"}

// pkg is one package of the build as go list reports it.
type pkg struct {
	ImportPath string
	Dir        string
	Standard   bool
	Imports    []string
	Module     *struct{ Path string }
}

// load runs go list over the module and everything it depends on.
func load(t *testing.T) map[string]*pkg {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not found")
	}
	cmd := exec.Command(gobin, "list", "-deps", "-json=ImportPath,Dir,Standard,Imports,Module", "./...")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	pkgs := map[string]*pkg{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs[p.ImportPath] = &p
	}
	return pkgs
}

// rel is a module package's path inside the module: "engine", "." for
// the root; ok is false for any other package.
func rel(importPath string) (string, bool) {
	if importPath == module {
		return ".", true
	}
	r, ok := strings.CutPrefix(importPath, module+"/")
	return r, ok
}

// sourceImports is every import of a package's non-test files, whatever
// their build constraints (lock_windows.go as much as lock_linux.go), so a
// rule holds on every platform and not only on the one running the test.
func sourceImports(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, parser.ImportsOnly|parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if ignored(af.Comments) {
			continue
		}
		for _, is := range af.Imports {
			path, _ := strconv.Unquote(is.Path.Value)
			seen[path] = true
		}
	}
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

var buildIgnore = regexp.MustCompile(`^//go:build\s+ignore\s*$`)

func ignored(groups []*ast.CommentGroup) bool {
	for _, g := range groups {
		for _, c := range g.List {
			if buildIgnore.MatchString(c.Text) {
				return true
			}
		}
	}
	return false
}

// TestDependencies: every import between the module's packages is in
// allowed, every package is in it, and the third-party rules hold.
func TestDependencies(t *testing.T) {
	pkgs := load(t)
	var mine []string
	for path := range pkgs {
		if r, ok := rel(path); ok {
			mine = append(mine, r)
		}
	}
	sort.Strings(mine)
	for _, r := range mine {
		rules, ok := allowed[r]
		if !ok {
			t.Errorf("package %s is not in deps_test.go's table: add it with the symbi packages it may import", r)
			continue
		}
		p := pkgs[importPath(r)]
		for _, imp := range sourceImports(t, p.Dir) {
			to, ok := rel(imp)
			if !ok {
				continue
			}
			if !slices.Contains(rules, to) {
				t.Errorf("new edge %s → %s: deps_test.go does not allow %s to import %s", r, to, r, to)
			}
		}
	}
	for r := range allowed {
		if _, ok := pkgs[importPath(r)]; !ok {
			t.Errorf("deps_test.go names package %s, which does not exist", r)
		}
	}

	reach := reachability(pkgs)
	for _, m := range thirdParty {
		for _, r := range append(slices.Clone(m.importers), m.unreached...) {
			if _, ok := allowed[r]; !ok {
				t.Errorf("deps_test.go's rule for %s names package %s, which is not in the table", m.module, r)
			}
		}
		for _, r := range mine {
			p := pkgs[importPath(r)]
			for _, imp := range sourceImports(t, p.Dir) {
				if inModule(imp, m.module) && !slices.Contains(m.importers, r) {
					t.Errorf("new edge %s → %s: only %s may import %s", r, imp, strings.Join(m.importers, ", "), m.module)
				}
			}
		}
		for _, r := range m.unreached {
			if via, ok := reach(importPath(r), m.module); ok {
				t.Errorf("%s depends on %s (through %s): it must not", r, m.module, strings.Join(via, " → "))
			}
		}
	}
}

// importPath is the import path of a package named by its path inside the
// module.
func importPath(r string) string {
	if r == "." {
		return module
	}
	return module + "/" + r
}

func inModule(importPath, mod string) bool {
	return importPath == mod || strings.HasPrefix(importPath, mod+"/")
}

// reachability returns a function that reports whether package from
// depends on a package of module mod, and the chain of imports that does.
func reachability(pkgs map[string]*pkg) func(from, mod string) ([]string, bool) {
	return func(from, mod string) ([]string, bool) {
		prev := map[string]string{from: ""}
		queue := []string{from}
		for len(queue) > 0 {
			at := queue[0]
			queue = queue[1:]
			p := pkgs[at]
			if p == nil {
				continue
			}
			for _, imp := range p.Imports {
				if _, seen := prev[imp]; seen {
					continue
				}
				prev[imp] = at
				if inModule(imp, mod) {
					var chain []string
					for n := imp; n != ""; n = prev[n] {
						chain = append(chain, strings.TrimPrefix(n, module+"/"))
					}
					slices.Reverse(chain)
					return chain, true
				}
				queue = append(queue, imp)
			}
		}
		return nil, false
	}
}

// TestDocImportRules: what a doc.go says a package must not import, the
// table does not allow; a package that says who alone may import it is
// imported by no one else; and one that imports only the standard library
// does.
func TestDocImportRules(t *testing.T) {
	// The words the doc comments use for packages.
	implementations := []string{"provider/openai", "provider/scripted", "provider/fakeserver"}
	words := map[string][]string{
		"interp":     {"interp"},
		"engine":     {"engine"},
		"lang":       {"lang"},
		"builtins":   {"builtins"},
		"tools":      {"builtins"},
		"policy":     {"policy"},
		"policies":   {"policy"},
		"policy/opa": {"policy/opa"},
		"budget":     {"budget"},
		"journal":    {"journal"},
		"repl":       {"repl"},
	}
	mustNot := regexp.MustCompile(`must not [^.;:]*?\bimport (.*?)(?:[.;:]|, and |$)`)
	onlyBy := regexp.MustCompile(`must not be imported(?: by anything but (.*?))?(?:[.;:(]|$)`)
	stdOnly := regexp.MustCompile(`imports only the standard library`)
	word := regexp.MustCompile(`[a-z/]+`)
	checked := 0
	for r, rules := range allowed {
		doc, err := os.ReadFile(filepath.Join(r, "doc.go"))
		if errors.Is(err, os.ErrNotExist) {
			continue
		} else if err != nil {
			t.Fatal(err)
		}
		text := commentText(string(doc))
		for _, m := range mustNot.FindAllStringSubmatch(text, -1) {
			checked++
			phrase := m[1]
			var named []string
			switch {
			case strings.Contains(phrase, "any other symbi package"):
				// "any other symbi package but internal/jsonenc, the …"
				_, but, _ := strings.Cut(phrase, " but ")
				but, _, _ = strings.Cut(but, ",")
				for other := range allowed {
					if other != r && !slices.Contains(strings.Fields(but), other) {
						named = append(named, other)
					}
				}
			case strings.Contains(phrase, "implementation"):
				named = append(named, implementations...)
			case strings.Contains(phrase, "provider"):
				named = append(named, "provider")
				named = append(named, implementations...)
			}
			for _, w := range word.FindAllString(phrase, -1) {
				named = append(named, words[w]...)
			}
			if len(named) == 0 {
				t.Errorf("%s/doc.go: %q names no package this test knows; teach TestDocImportRules its words", r, m[0])
			}
			for _, n := range named {
				if slices.Contains(rules, n) {
					t.Errorf("%s/doc.go says it must not import %s, but deps_test.go allows it", r, n)
				}
			}
		}
		for _, m := range onlyBy.FindAllStringSubmatch(text, -1) {
			checked++
			may := strings.Fields(strings.NewReplacer(",", " ", " and ", " ", " or ", " ").Replace(m[1]))
			for other, rules := range allowed {
				if slices.Contains(rules, r) && !slices.Contains(may, other) {
					t.Errorf("%s/doc.go says it must not be imported but by %v, yet deps_test.go allows %s to", r, may, other)
				}
			}
		}
		if stdOnly.MatchString(text) {
			checked++
			if len(rules) > 0 {
				t.Errorf("%s/doc.go says it imports only the standard library, but deps_test.go allows %v", r, rules)
			}
			for _, imp := range sourceImports(t, r) {
				if first, _, _ := strings.Cut(imp, "/"); strings.Contains(first, ".") {
					t.Errorf("%s/doc.go says it imports only the standard library, but it imports %s", r, imp)
				}
			}
		}
	}
	if checked < len(allowed)/2 {
		t.Fatalf("only %d import rules found in the doc.go files: the patterns no longer match how they are written", checked)
	}
}

// commentText is the text of a doc.go's comment lines, joined into one
// stream so a rule broken across lines reads whole.
func commentText(src string) string {
	var b strings.Builder
	for _, line := range strings.Split(src, "\n") {
		if c, ok := strings.CutPrefix(strings.TrimSpace(line), "//"); ok {
			b.WriteString(strings.TrimSpace(c))
			b.WriteByte(' ')
		}
	}
	return b.String()
}
