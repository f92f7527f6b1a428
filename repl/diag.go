package repl

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
)

// WriteDiagnostics prints diagnostics the way the REPL shows them: the
// summary, the source line of the subject with a caret under its range,
// and the detail. hcl.NewDiagnosticTextWriter marks the range only with
// colour; a caret reads the same on a terminal, in a script's output and
// in a test.
func WriteDiagnostics(w io.Writer, files map[string]*hcl.File, diags hcl.Diagnostics) error {
	bw := bufio.NewWriter(w)
	for _, d := range diags {
		sev := "Error"
		if d.Severity == hcl.DiagWarning {
			sev = "Warning"
		}
		fmt.Fprintf(bw, "%s: %s\n", sev, d.Summary)
		if d.Subject != nil {
			writeSnippet(bw, files, *d.Subject)
		}
		if d.Detail != "" {
			fmt.Fprintf(bw, "\n%s\n", d.Detail)
		}
		bw.WriteString("\n")
	}
	return bw.Flush()
}

func writeSnippet(w *bufio.Writer, files map[string]*hcl.File, rng hcl.Range) {
	f := files[rng.Filename]
	if f == nil || rng.Start.Line < 1 {
		fmt.Fprintf(w, "\n  on %s line %d\n", rng.Filename, rng.Start.Line)
		return
	}
	lines := bytes.Split(f.Bytes, []byte("\n"))
	if rng.Start.Line > len(lines) {
		fmt.Fprintf(w, "\n  on %s line %d\n", rng.Filename, rng.Start.Line)
		return
	}
	src := strings.TrimRight(string(lines[rng.Start.Line-1]), "\r")
	fmt.Fprintf(w, "\n  on %s line %d:\n", rng.Filename, rng.Start.Line)
	prefix := fmt.Sprintf("%4d: ", rng.Start.Line)
	fmt.Fprintf(w, "%s%s\n", prefix, src)
	from := rng.Start.Column
	to := rng.End.Column
	if rng.End.Line != rng.Start.Line {
		to = utf8.RuneCountInString(src) + 1
	}
	width := max(to-from, 1)
	// Tabs in the source keep their place so the caret stays aligned.
	var pad strings.Builder
	col := 1
	for _, r := range src {
		if col >= from {
			break
		}
		if r == '\t' {
			pad.WriteByte('\t')
		} else {
			pad.WriteByte(' ')
		}
		col++
	}
	for ; col < from; col++ {
		pad.WriteByte(' ')
	}
	fmt.Fprintf(w, "%s%s%s\n", strings.Repeat(" ", len(prefix)), pad.String(), strings.Repeat("^", width))
}
