package symbi_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoRegexpCompiledAtInit: Go runs every linked package's init before
// main, for every command, so a package-level regexp.MustCompile costs
// each `symbi` process its compile whether or not the command uses it
// (policy's request-ID pattern alone was 67 kB and 932 allocations).
// symbi's own patterns compile on first use (sync.OnceValue).
func TestNoRegexpCompiledAtInit(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not found")
	}
	out, err := exec.Command(gobin, "list", "-deps", "-f", "{{.ImportPath}} {{.Dir}} {{join .GoFiles \" \"}}", "./cmd/symbi").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	fset := token.NewFileSet()
	linked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		if _, ok := rel(fields[0]); !ok {
			continue
		}
		linked++
		for _, name := range fields[2:] {
			f, err := parser.ParseFile(fset, filepath.Join(fields[1], name), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			for _, call := range initRegexps(f) {
				t.Errorf("%s: a package-level regexp.%s compiles at init in every symbi process; compile it on first use (sync.OnceValue)",
					fset.Position(call.Pos()), call.Fun.(*ast.SelectorExpr).Sel.Name)
			}
		}
	}
	if linked < 20 {
		t.Fatalf("only %d of symbi's packages found in the binary's dependencies", linked)
	}
}

// initRegexps is the regexp compiles a file's package-level variables run
// at init (not those inside function literals, which run when called).
func initRegexps(f *ast.File) []*ast.CallExpr {
	var calls []*ast.CallExpr
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.VAR {
			continue
		}
		for _, spec := range gd.Specs {
			for _, v := range spec.(*ast.ValueSpec).Values {
				ast.Inspect(v, func(n ast.Node) bool {
					if _, lit := n.(*ast.FuncLit); lit {
						return false
					}
					if call, ok := n.(*ast.CallExpr); ok {
						if sel, ok := call.Fun.(*ast.SelectorExpr); ok {
							if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "regexp" && strings.Contains(sel.Sel.Name, "Compile") {
								calls = append(calls, call)
							}
						}
					}
					return true
				})
			}
		}
	}
	return calls
}
