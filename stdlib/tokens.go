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

// TokenCounter is EstimateTokens of text that arrives in pieces, such as a
// streamed answer, without holding the text: after Add(a) and Add(b),
// Tokens() is EstimateTokens(a + b) for pieces that split the text between
// runes. The zero value counts nothing yet.
type TokenCounter struct {
	bytes, runes int64
}

// Add counts one more piece.
func (c *TokenCounter) Add(piece string) {
	c.bytes += int64(len(piece))
	c.runes += int64(utf8.RuneCountInString(piece))
}

// Tokens is the estimate of everything added so far.
func (c *TokenCounter) Tokens() int64 {
	if c.bytes == 0 {
		return 0
	}
	est := (c.bytes + 3) / 4
	if r := (c.runes + 1) / 2; c.runes != c.bytes && r > est {
		est = r
	}
	return est
}
