package eval

import (
	"strings"
	"testing"
)

// An env() value is sent as the environment holds it. Through cty a string
// comes back in Unicode normal form C: "e\u0301" (e and a combining acute)
// would become "\u00e9", and ";" (U+037E) would become ";" — a key or a
// password that is not the one the user set.
func TestEnvValuesAreExact(t *testing.T) {
	const decomposed = "k\u0065\u0301y\u037e"
	env := envOf(map[string]string{"K": decomposed})
	for _, tc := range []struct{ src, want string }{
		{`env("K")`, decomposed},
		{`env("K", "unused")`, decomposed},
		{`"${env("K")}"`, decomposed},
		{`"Bearer ${env("K")}!"`, "Bearer " + decomposed + "!"},
		{`env("UNSET", "fallback")`, "fallback"},
	} {
		got, err := String(deferredURL(tc.src), env)
		if err != nil || got != tc.want {
			t.Errorf("String(%s) = %q, %v; want %q", tc.src, got, err, tc.want)
		}
	}
	if _, err := String(deferredURL(`env("UNSET")`), env); err == nil {
		t.Error("an unset variable without a default gave no error")
	}
	// What is computed from a value goes through cty, as any expression.
	if got, err := String(deferredURL(`upper(env("K"))`), env); err != nil || strings.Contains(got, "\u0301") {
		t.Errorf("upper(env(K)) = %q, %v: computed values are cty strings", got, err)
	}
	u, err := URL(deferredURL(`"https://example.com/?k=${env("K")}"`), env)
	if err != nil || u != "https://example.com/?k=ke%CC%81y%CD%BE" {
		t.Errorf("URL = %q, %v", u, err)
	}
}
