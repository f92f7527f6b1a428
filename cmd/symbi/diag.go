package main

import (
	"encoding/json"
	"io"
	"os"

	"github.com/hashicorp/hcl/v2"
	"golang.org/x/term"
)

// printDiags writes diagnostics with source snippets, colour when w is a terminal.
func printDiags(w io.Writer, files map[string]*hcl.File, diags hcl.Diagnostics) {
	if len(diags) == 0 {
		return
	}
	width, color := 0, false
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		color = true
		if wd, _, err := term.GetSize(int(f.Fd())); err == nil {
			width = wd
		}
	}
	dw := hcl.NewDiagnosticTextWriter(w, files, uint(width), color)
	_ = dw.WriteDiagnostics(diags)
}

// jsonDiag is one diagnostic in the -json form, for editors.
type jsonDiag struct {
	Severity string   `json:"severity"` // error | warning
	Summary  string   `json:"summary"`
	Detail   string   `json:"detail,omitempty"`
	Range    *jsonPos `json:"range,omitempty"`
}

type jsonPos struct {
	Filename string `json:"filename"`
	Line     int    `json:"line"`
	Column   int    `json:"column"`
	EndLine  int    `json:"end_line"`
	EndCol   int    `json:"end_column"`
}

type jsonValidation struct {
	Valid        bool       `json:"valid"`
	ErrorCount   int        `json:"error_count"`
	WarningCount int        `json:"warning_count"`
	Diagnostics  []jsonDiag `json:"diagnostics"`
}

func writeJSONDiags(w io.Writer, diags hcl.Diagnostics) error {
	out := jsonValidation{Valid: !diags.HasErrors(), Diagnostics: []jsonDiag{}}
	for _, d := range diags {
		jd := jsonDiag{Severity: "error", Summary: d.Summary, Detail: d.Detail}
		if d.Severity == hcl.DiagWarning {
			jd.Severity = "warning"
			out.WarningCount++
		} else {
			out.ErrorCount++
		}
		if d.Subject != nil {
			jd.Range = &jsonPos{Filename: d.Subject.Filename, Line: d.Subject.Start.Line, Column: d.Subject.Start.Column,
				EndLine: d.Subject.End.Line, EndCol: d.Subject.End.Column}
		}
		out.Diagnostics = append(out.Diagnostics, jd)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
