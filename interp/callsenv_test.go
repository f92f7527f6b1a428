package interp

import (
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

func TestCallsEnv(t *testing.T) {
	for src, want := range map[string]bool{
		`env("X")`:                  true,
		`["a", env("X")]`:           true,
		`{ a = env("X") }`:          true,
		`{ (env("K")) = 1 }`:        true,
		`"pre-${env("X")}"`:         true,
		`"${env("X")}"`:             true,
		`upper(env("X"))`:           true,
		`1 + length(env("X"))`:      true,
		`true ? env("X") : "b"`:     true,
		`[for s in ["a"] : env(s)]`: true,
		`"plain"`:                   false,
		`var.x`:                     false,
		`["a", upper("b")]`:         false,
		`{ a = { b = [1, 2] } }`:    false,
		`environment("X")`:          false,
		`"${var.env}"`:              false,
		`1 + 2`:                     false,
	} {
		expr, diags := hclsyntax.ParseExpression([]byte(src), "x.hcl", hcl.InitialPos)
		if diags.HasErrors() {
			t.Fatalf("%s: %s", src, diags)
		}
		if got := callsEnv(expr); got != want {
			t.Errorf("callsEnv(%s) = %v, want %v", src, got, want)
		}
	}
}
