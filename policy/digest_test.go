package policy_test

import (
	"encoding/json"
	"testing"

	"github.com/symbi-dev/symbi/builtins"
	"github.com/symbi-dev/symbi/policy"
	"github.com/symbi-dev/symbi/seal"
)

// FuzzArgumentsDigestIsCanonical holds policy's digest to the toolbox's
// canonical JSON (builtins.CanonicalJSON, which policy may not import): for
// every JSON object both read, the digest is seal.Digest of that form, so
// the digest a person is shown names exactly one set of arguments however
// the model spelled them.
func FuzzArgumentsDigestIsCanonical(f *testing.F) {
	for _, s := range []string{`{}`, `{"b":1,"a":"<x>&"}`, `{"n":1.50,"e":1e2,"u":"\u00e9\ud83d\ude00"}`, "{\"a\" :\n[1, {\"z\":null}]}", `{"a":1,"a":2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var obj map[string]json.RawMessage
		if json.Unmarshal(in, &obj) != nil {
			return
		}
		canon, err := builtins.CanonicalJSON(in)
		if err != nil {
			return
		}
		a := policy.Action{Type: policy.ToolCall, Tool: "t", Arguments: in}
		if got, want := policy.ArgumentsDigest(a), seal.Digest(canon); got != want {
			t.Fatalf("digest of %q = %s, want %s (of %s)", in, got, want, canon)
		}
	})
}
