package stdlib

import "unicode/utf8"

// EstimateTokens is the token estimator the engine uses for preflight and
// context fitting, and that tokens() exposes: about four bytes of English
// text per token, counted in runes so that non-ASCII text is not
// under-estimated, rounded up.
func EstimateTokens(s string) int {
	if s == "" {
		return 0
	}
	n := utf8.RuneCountInString(s)
	b := len(s)
	// Multi-byte scripts tokenise densely: take the larger of runes/2 and bytes/4.
	est := (b + 3) / 4
	if r := (n + 1) / 2; n != b && r > est {
		est = r
	}
	return est
}
