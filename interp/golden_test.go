package interp

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
	"github.com/rogpeppe/go-internal/txtar"

	"github.com/symbi-dev/symbi/plan"
)

var update = flag.Bool("update", false, "rewrite the expected plans in testdata/plans")

// Sections of a golden archive that are expectations or inputs to the
// compiler rather than configuration files.
const (
	wantJSON  = "plan.json"
	wantTree  = "plan.tree"
	wantDiags = "diagnostics"
	varsFile  = "vars" // name=value lines, as --var
	envFile   = "env"  // NAME=value lines, the environment
)

// TestGoldenPlans compiles each testdata/plans/*.txtar and compares the
// canonical JSON, the tree and the warnings with the archive's
// expectations. go test -update rewrites them.
func TestGoldenPlans(t *testing.T) {
	archives, err := filepath.Glob("../testdata/plans/*.txtar")
	if err != nil {
		t.Fatal(err)
	}
	if len(archives) == 0 {
		t.Fatal("no golden plans")
	}
	for _, path := range archives {
		name := strings.TrimSuffix(filepath.Base(path), ".txtar")
		t.Run(name, func(t *testing.T) {
			ar, err := txtar.ParseFile(path)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			opts := Options{LookupEnv: func(string) (string, bool) { return "", false }}
			for _, f := range ar.Files {
				switch f.Name {
				case wantJSON, wantTree, wantDiags:
				case varsFile:
					opts.Vars = parsePairs(f.Data)
				case envFile:
					env := parsePairs(f.Data)
					opts.LookupEnv = func(k string) (string, bool) { v, ok := env[k]; return v, ok }
				default:
					writeFile(t, filepath.Join(dir, f.Name), f.Data)
				}
			}
			cfg, diags := Compile(dir, opts)
			if diags.HasErrors() {
				t.Fatalf("compile errors:\n%s", formatDiags(diags))
			}
			js, err := plan.Encode(cfg.Plan)
			if err != nil {
				t.Fatal(err)
			}
			var tree bytes.Buffer
			if err := plan.WriteTree(&tree, cfg.Plan); err != nil {
				t.Fatal(err)
			}
			// Values from the environment and sensitive variables never enter a plan.
			for _, f := range ar.Files {
				if f.Name != envFile && f.Name != varsFile {
					continue
				}
				for k, v := range parsePairs(f.Data) {
					if len(v) > 3 && !strings.HasPrefix(k, "SYMBI_VAR_") && (f.Name == envFile || strings.Contains(k, "token")) && (bytes.Contains(js, []byte(v)) || bytes.Contains(tree.Bytes(), []byte(v))) {
						t.Errorf("the plan holds the value of %s", k)
					}
				}
			}
			got := map[string][]byte{wantJSON: js, wantTree: tree.Bytes(), wantDiags: []byte(formatDiags(diags))}
			if *update {
				var files []txtar.File
				for _, f := range ar.Files {
					if _, isWant := got[f.Name]; !isWant {
						files = append(files, f)
					}
				}
				for _, n := range []string{wantDiags, wantJSON, wantTree} {
					if n == wantDiags && len(got[n]) == 0 {
						continue
					}
					files = append(files, txtar.File{Name: n, Data: got[n]})
				}
				ar.Files = files
				if err := os.WriteFile(path, txtar.Format(ar), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			for _, n := range []string{wantJSON, wantTree, wantDiags} {
				want := section(ar, n)
				if diff := cmp.Diff(string(want), string(got[n])); diff != "" {
					t.Errorf("%s differs (-want +got; go test ./interp -run TestGoldenPlans -update rewrites it):\n%s", n, diff)
				}
			}
			// The plan survives a round trip through its JSON form.
			back, err := plan.Decode(js)
			if err != nil {
				t.Fatal(err)
			}
			again, _ := plan.Encode(back)
			if !bytes.Equal(js, again) {
				t.Errorf("plan JSON does not round-trip:\n%s", cmp.Diff(string(js), string(again)))
			}
		})
	}
}

func section(ar *txtar.Archive, name string) []byte {
	for _, f := range ar.Files {
		if f.Name == name {
			return f.Data
		}
	}
	return nil
}

func parsePairs(b []byte) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			out[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return out
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// formatDiags prints diagnostics one a line, with positions relative to the
// configuration directory, so they can be compared.
func formatDiags(diags hcl.Diagnostics) string {
	var lines []string
	for _, d := range diags {
		sev := "error"
		if d.Severity == hcl.DiagWarning {
			sev = "warning"
		}
		pos := "-"
		if d.Subject != nil {
			pos = fmt.Sprintf("%s:%d", filepath.Base(d.Subject.Filename), d.Subject.Start.Line)
		}
		lines = append(lines, fmt.Sprintf("%s %s: %s", pos, sev, d.Summary))
	}
	sort.Strings(lines)
	if len(lines) == 0 {
		return ""
	}
	return strings.Join(lines, "\n") + "\n"
}
