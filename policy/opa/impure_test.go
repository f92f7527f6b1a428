package opa

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/symbi-dev/symbi/plan"
)

func TestOPAImpure(t *testing.T) {
	for _, c := range []struct {
		name, rego string
		want       []string
	}{
		{"pure", `package symbi.gate
decision := {"outcome": "allow", "reason": sprintf("%v", [count(input.action.arguments)])}`, nil},
		{"nested calls", `package symbi.gate
late if time.now_ns() > 0
id := uuid.rfc4122("x")
decision := {"outcome": "allow", "reason": sprintf("%v %v", [rand.intn("k", 10), late])}`, []string{"rand.intn", "time.now_ns", "uuid.rfc4122"}},
		{"a call as an expression", `package symbi.gate
ok if {
	http.send({"method": "get", "url": "http://127.0.0.1:1"})
}
decision := {"outcome": "allow", "reason": "x"}`, []string{"http.send"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			b := []byte(c.rego)
			if err := os.WriteFile(filepath.Join(dir, "p.rego"), b, 0o644); err != nil {
				t.Fatal(err)
			}
			o, err := NewOPA(context.Background(), "policy.p", plan.OPAPolicy{Modules: []plan.FileRef{plan.NewFileRef("p.rego", b)}, Query: "data.symbi.gate.decision"}, dir)
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := o.Impure(context.Background()); !slices.Equal(got, c.want) && !(len(got) == 0 && len(c.want) == 0) {
				t.Errorf("Impure() = %v, want %v", got, c.want)
			}
		})
	}
}
