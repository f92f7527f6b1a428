package stdlib

import (
	"testing"
	"unicode/utf8"
)

// FuzzTokenCounter holds TokenCounter to its promise: pieces split between
// runes count as EstimateTokens of their concatenation.
func FuzzTokenCounter(f *testing.F) {
	for _, s := range []string{"", "a", "hello world", "héllo wörld", "日本語のテキスト", "\xff\xfe", "mixed ascii と日本語"} {
		f.Add(s, uint8(3))
	}
	f.Fuzz(func(t *testing.T, s string, every uint8) {
		var c TokenCounter
		step := int(every%16) + 1
		for rest := s; rest != ""; {
			end := min(step, len(rest))
			for end < len(rest) && !utf8.RuneStart(rest[end]) {
				end++
			}
			c.Add(rest[:end])
			rest = rest[end:]
		}
		if got, want := c.Tokens(), int64(EstimateTokens(s)); got != want {
			t.Fatalf("TokenCounter over %q in pieces of %d = %d, EstimateTokens = %d", s, step, got, want)
		}
	})
}
