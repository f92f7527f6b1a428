package repl

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/symbi-dev/symbi/internal/hclfmt"
)

// eval evaluates an expression in the configuration's scope and prints its
// value in HCL syntax.
func (s *Session) eval(line string) (string, hcl.Diagnostics) {
	v, diags := s.evalAt(line, 0, len(line))
	if diags.HasErrors() {
		return "", diags
	}
	if v.ContainsMarked() {
		// As in Terraform's console: a value derived from a sensitive
		// variable is not shown, whatever was done to it. The compiler
		// marks sensitive values, and the marks follow them through
		// locals, functions and templates.
		return "(sensitive value)\n", diags
	}
	return FormatValue(v) + "\n", diags
}

// evalAt evaluates the expression at line[start:end]; its diagnostics point
// into the whole line.
func (s *Session) evalAt(line string, start, end int) (cty.Value, hcl.Diagnostics) {
	expr, diags := s.parseAt(line, start, end)
	if diags.HasErrors() {
		return cty.DynamicVal, diags
	}
	v, ds := expr.Value(s.scope())
	diags = append(diags, ds...)
	if ds.HasErrors() && s.cfg == nil && len(expr.Variables()) > 0 {
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagWarning,
			Summary:  "No configuration loaded",
			Detail:   "Without a configuration only functions are in scope; load one with :load PATH.",
		})
	}
	return v, diags
}

func (s *Session) parseAt(line string, start, end int) (hclsyntax.Expression, hcl.Diagnostics) {
	return hclsyntax.ParseExpression([]byte(line[start:end]), InputName, posAt(line, start))
}

// FormatValue prints a value in HCL syntax, as it would be written in a
// configuration (hclwrite's TokensForValue, formatted, by way of hclfmt).
// Unknown parts, which appear when a variable has no value yet, print as
// (unknown).
func FormatValue(v cty.Value) string {
	v, _ = v.UnmarkDeep()
	if v.IsWhollyKnown() {
		return strings.TrimRight(string(hclfmt.Format(hclfmt.TokensForValue(v).Bytes())), "\n")
	}
	var b strings.Builder
	writePartial(&b, v, "")
	return string(hclfmt.Format([]byte(b.String())))
}

// writePartial writes a value that is not wholly known, which
// hclfmt.TokensForValue refuses.
func writePartial(b *strings.Builder, v cty.Value, indent string) {
	switch {
	case !v.IsKnown():
		b.WriteString("(unknown)")
	case v.IsNull():
		b.WriteString("null")
	case v.IsWhollyKnown():
		b.Write(hclfmt.TokensForValue(v).Bytes())
	case v.Type().IsObjectType() || v.Type().IsMapType():
		b.WriteString("{\n")
		m := v.AsValueMap()
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			b.WriteString(indent + "  ")
			if hclsyntax.ValidIdentifier(k) {
				b.WriteString(k)
			} else {
				fmt.Fprintf(b, "%q", k)
			}
			b.WriteString(" = ")
			writePartial(b, m[k], indent+"  ")
			b.WriteString("\n")
		}
		b.WriteString(indent + "}")
	default: // list, set, tuple
		b.WriteString("[\n")
		for it := v.ElementIterator(); it.Next(); {
			_, e := it.Element()
			b.WriteString(indent + "  ")
			writePartial(b, e, indent+"  ")
			b.WriteString(",\n")
		}
		b.WriteString(indent + "]")
	}
}

func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
}
