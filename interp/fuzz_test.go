package interp

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/symbi-dev/symbi/lang"
	"github.com/symbi-dev/symbi/plan"
)

// FuzzCompile parses and compiles arbitrary bytes as a configuration file in
// testdata/errors (so file(), scripts and policies resolve). It must never
// panic, and a configuration without errors must give a plan that encodes
// and decodes. Seeds are every error case and every golden configuration.
//
//	go test -run=^$ -fuzz=FuzzCompile -fuzztime=20s ./interp/
func FuzzCompile(f *testing.F) {
	seeds, _ := filepath.Glob("../testdata/errors/*.hcl")
	for _, s := range seeds {
		if b, err := os.ReadFile(s); err == nil {
			f.Add(b)
		}
	}
	archives, _ := filepath.Glob("../testdata/plans/*.txtar")
	for _, a := range archives {
		ar, err := txtar.ParseFile(a)
		if err != nil {
			continue
		}
		for _, file := range ar.Files {
			if filepath.Ext(file.Name) == ".hcl" {
				f.Add(file.Data)
			}
		}
	}
	f.Add([]byte{})
	f.Add([]byte("\x00\xff"))
	baseDir := "../testdata/errors"
	f.Fuzz(func(t *testing.T, src []byte) {
		name := filepath.Join(baseDir, "fuzz.hcl")
		for _, validate := range []bool{true, false} {
			cfg, diags := compileSources(context.Background(), baseDir, []lang.Source{{Name: name, Bytes: src}}, Options{Validate: validate, LookupEnv: noEnv})
			for _, d := range diags {
				if d.Subject == nil && d.Summary != "Value for undeclared variable" {
					t.Errorf("diagnostic without a range: %s", describe(d))
				}
			}
			if diags.HasErrors() || cfg == nil || validate {
				continue
			}
			js, err := plan.Encode(cfg.Plan)
			if err != nil {
				t.Fatalf("encode: %v", err)
			}
			back, err := plan.Decode(js)
			if err != nil {
				t.Fatalf("decode: %v\n%s", err, js)
			}
			again, _ := plan.Encode(back)
			if !bytes.Equal(js, again) {
				t.Fatalf("plan does not round-trip")
			}
		}
	})
}
