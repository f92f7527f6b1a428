package engine

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestTelemetryDoc holds docs/telemetry.md's tables to the code: every
// span, event, attribute and metric telemetry.go declares has a row in its
// table, and every row names one it declares; and every attribute a table
// lists for a span, an event or a metric is one the code declares.
func TestTelemetryDoc(t *testing.T) {
	declared := map[string][]string{} // by prefix: span, event, attr, metric
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "telemetry.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, s := range gd.Specs {
			vs := s.(*ast.ValueSpec)
			for i, name := range vs.Names {
				for _, prefix := range []string{"span", "event", "attr", "metric"} {
					if !strings.HasPrefix(name.Name, prefix) || i >= len(vs.Values) {
						continue
					}
					var lit *ast.BasicLit
					switch v := vs.Values[i].(type) {
					case *ast.BasicLit:
						lit = v
					case *ast.CallExpr: // attribute.Key("...")
						if len(v.Args) == 1 {
							lit, _ = v.Args[0].(*ast.BasicLit)
						}
					}
					if lit == nil {
						continue
					}
					s, _ := strconv.Unquote(lit.Value)
					declared[prefix] = append(declared[prefix], s)
				}
			}
		}
	}
	if len(declared["span"]) < 5 || len(declared["attr"]) < 20 {
		t.Fatalf("found %d spans and %d attributes in telemetry.go: the parse no longer matches how they are declared", len(declared["span"]), len(declared["attr"]))
	}
	doc, err := os.ReadFile("../docs/telemetry.md")
	if err != nil {
		t.Fatal(err)
	}
	tables := docTables(string(doc))
	code := regexp.MustCompile("`([^`]+)`")
	for _, c := range []struct{ heading, prefix string }{
		{"### Spans", "span"}, {"### Span events", "event"}, {"### Attributes", "attr"}, {"### Metrics", "metric"},
	} {
		rows, ok := tables[c.heading]
		if !ok {
			t.Errorf("docs/telemetry.md has no table under %q", c.heading)
			continue
		}
		var documented []string
		for _, r := range rows {
			m := code.FindStringSubmatch(r[0])
			if m == nil {
				t.Errorf("%s: row %q names nothing in `code`", c.heading, r[0])
				continue
			}
			documented = append(documented, m[1])
			if !slices.Contains(declared[c.prefix], m[1]) {
				t.Errorf("%s: `%s` is documented, but telemetry.go declares no such %s", c.heading, m[1], c.prefix)
			}
			// The attributes a span, an event or a metric lists.
			if c.prefix != "attr" {
				for _, cell := range r[1:] {
					for _, a := range code.FindAllStringSubmatch(cell, -1) {
						if strings.Contains(a[1], ".") && !strings.Contains(a[1], " ") && !strings.HasPrefix(a[1], "{") && !slices.Contains(declared["attr"], a[1]) && !slices.Contains(declared["metric"], a[1]) {
							t.Errorf("%s `%s`: lists `%s`, which telemetry.go does not declare", c.heading, m[1], a[1])
						}
					}
				}
			}
		}
		for _, d := range declared[c.prefix] {
			if !slices.Contains(documented, d) {
				t.Errorf("telemetry.go declares %s %q, and docs/telemetry.md's %q table has no row for it", c.prefix, d, c.heading)
			}
		}
	}
}

// docTables splits a Markdown document's tables by the heading above
// each: the rows' cells, header and separator left out.
func docTables(doc string) map[string][][]string {
	out := map[string][][]string{}
	heading := ""
	inTable := false
	for _, line := range strings.Split(doc, "\n") {
		switch {
		case strings.HasPrefix(line, "#"):
			heading, inTable = strings.TrimSpace(line), false
		case strings.HasPrefix(line, "|"):
			cells := strings.Split(strings.Trim(line, "|"), "|")
			for i := range cells {
				cells[i] = strings.TrimSpace(cells[i])
			}
			if !inTable { // the header
				inTable = true
				continue
			}
			if strings.HasPrefix(cells[0], "---") {
				continue
			}
			out[heading] = append(out[heading], cells)
		default:
			inTable = false
		}
	}
	return out
}
