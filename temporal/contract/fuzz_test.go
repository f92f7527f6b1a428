package contract

import (
	"path/filepath"
	"testing"

	"github.com/symbi-dev/symbi/engine"
	"github.com/symbi-dev/symbi/interp"
	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/seal"
)

// FuzzStart feeds a worker what anyone who may start workflows on its task
// queue can send: the workflow's input plan. Decoding it, checking its
// files and building its engine must never panic or hang; a plan that
// decodes encodes to bytes that decode again.
func FuzzStart(f *testing.F) {
	for _, ex := range []string{"quickstart.hcl", "reflect.hcl", "delegation.hcl", "plan_execute.hcl"} {
		cfg, diags := interp.Compile(filepath.Join("..", "..", "examples", ex), interp.Options{LookupEnv: func(string) (string, bool) { return "", false }})
		if diags.HasErrors() {
			f.Fatal(diags.Error())
		}
		b, err := plan.Encode(cfg.Plan)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"format_version":1,"files":[{"path":"/etc/hostname","sha256":"x"},{"path":"../../x","sha256":""}]}`))
	// The examples' own directory: the seeds' files verify, so their
	// mutations reach engine.New.
	base, err := filepath.Abs(filepath.Join("..", "..", "examples"))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s := Start{Plan: b, PlanDigest: seal.Digest(b), Agent: "agent.a", Input: "x"}
		p, err := s.Decode()
		if err != nil {
			return
		}
		again, err := plan.Encode(p)
		if err != nil {
			t.Fatalf("a decoded plan does not encode: %v", err)
		}
		if _, err := plan.Decode(again); err != nil {
			t.Fatalf("a decoded plan does not decode again: %v", err)
		}
		if VerifyFiles(p, base) != nil {
			return
		}
		e, err := engine.New(p, engine.Options{BaseDir: base, StateDir: t.TempDir(), LookupEnv: func(string) (string, bool) { return "", false }})
		if err == nil {
			e.Close()
		}
	})
}
