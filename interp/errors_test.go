package interp

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

var markerRE = regexp.MustCompile(`#\s*(ERROR|WARNING):\s*(.+?)\s*$`)

// TestErrorMarkers compiles each testdata/errors/*.hcl and checks that every
// "# ERROR: <summary>" marker has an error with that summary on its line, and
// that no error is reported without a marker. "# WARNING:" markers must be
// matched too; unmarked warnings are allowed.
func TestErrorMarkers(t *testing.T) {
	files, err := filepath.Glob("../testdata/errors/*.hcl")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 40 {
		t.Fatalf("only %d error cases", len(files))
	}
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".hcl"), func(t *testing.T) {
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			type want struct {
				sev     hcl.DiagnosticSeverity
				line    int
				summary string
			}
			var wants []want
			sc := bufio.NewScanner(bytes.NewReader(src))
			for line := 1; sc.Scan(); line++ {
				if m := markerRE.FindStringSubmatch(sc.Text()); m != nil {
					sev := hcl.DiagError
					if m[1] == "WARNING" {
						sev = hcl.DiagWarning
					}
					wants = append(wants, want{sev, line, m[2]})
				}
			}
			if len(wants) == 0 {
				t.Fatal("no # ERROR: or # WARNING: marker")
			}
			cfg, diags := Compile(path, Options{LookupEnv: func(string) (string, bool) { return "", false }})
			_ = cfg
			matched := make([]bool, len(diags))
			for _, w := range wants {
				found := false
				for i, d := range diags {
					if d.Severity == w.sev && d.Subject != nil && d.Subject.Start.Line == w.line && d.Summary == w.summary {
						matched[i], found = true, true
					}
				}
				if !found {
					t.Errorf("line %d: want %s %q; got:\n%s", w.line, sevName(w.sev), w.summary, listDiags(diags))
				}
			}
			for i, d := range diags {
				if d.Severity == hcl.DiagError && !matched[i] {
					t.Errorf("unexpected error: %s", describe(d))
				}
				if d.Subject == nil {
					t.Errorf("diagnostic without a range: %s", describe(d))
				}
			}
		})
	}
}

func sevName(s hcl.DiagnosticSeverity) string {
	if s == hcl.DiagWarning {
		return "warning"
	}
	return "error"
}

func describe(d *hcl.Diagnostic) string {
	pos := "?"
	if d.Subject != nil {
		pos = fmt.Sprintf("line %d", d.Subject.Start.Line)
	}
	return fmt.Sprintf("%s %s %q: %s", pos, sevName(d.Severity), d.Summary, d.Detail)
}

func listDiags(diags hcl.Diagnostics) string {
	var b strings.Builder
	for _, d := range diags {
		b.WriteString("\t" + describe(d) + "\n")
	}
	return b.String()
}
