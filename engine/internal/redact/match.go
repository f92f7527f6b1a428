package redact

import (
	"encoding/base64"
	"unicode/utf16"
	"unicode/utf8"
)

// How a secret is recognised in text that encoded it.
//
// A secret is matched byte by byte, and each of its bytes may be spelled in
// the text as itself or in any of the escapes the usual encoders write,
// freely mixed: %XX in upper or lower case (URL query and path escaping,
// which escape different sets), "+" for a space (form encoding), and
// JSON's \uXXXX (surrogate pairs included) and two-character escapes (\/,
// \", \\, \n…). So "tok/a=b" is found as "tok%2Fa%3Db", "tok%2fa=b",
// "tok\/a=b" and "tok\u002fa\u003db" alike, without a list of every
// combination.
//
// Base64 cannot be matched that way: one secret byte spreads over two
// characters. Each secret of minBase64Len bytes or more adds patterns of
// its own: for each of the three alignments at which a secret can start
// inside a longer base64 stream (after 0, 1 or 2 bytes of a 3-byte group),
// the characters of the encoding that the secret's bits alone decide, in
// the standard and the URL alphabet. Padded and raw encodings share them,
// and so does a secret embedded in a longer value ("user:" + key in a
// Basic header). A match also takes the one character of that alphabet on
// each side, which carries a few of the secret's bits, and any padding.
// Those patterns are matched with the same escapes (a base64 value in a URL
// query has its "/" as %2F).
//
// Not recognised: a secret encoded twice (%252F), hex, base64 broken across
// lines, or any transformation a hostile party chooses to hide it. The
// Redactor keeps secrets out of what symbi writes and sends by accident of
// an echo; it cannot stop a party that holds a secret from disguising it.

// minBase64Len is the shortest secret whose base64 forms are looked for:
// the part of a 8-byte secret's encoding that it alone decides is 9 to 10
// characters at every alignment, long enough not to match ordinary text
// by chance.
const minBase64Len = 8

// pattern is one byte string the Redactor looks for in any spelling.
type pattern struct {
	b []byte
	s string // b, for strings.Index
	// base64 is the alphabet of a base64 pattern (stdBase64 or
	// urlBase64; 0 for the secret itself): a match also takes one
	// neighbouring character of it on each side, and padding after.
	base64 byte
}

// The base64 alphabets, by the two characters they differ in.
const (
	stdBase64 = '/'
	urlBase64 = '_'
)

// inBase64 reports whether c belongs to alphabet.
func inBase64(alphabet, c byte) bool {
	switch {
	case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		return true
	case alphabet == stdBase64:
		return c == '+' || c == '/'
	case alphabet == urlBase64:
		return c == '-' || c == '_'
	}
	return false
}

// patternsOf are the patterns of one secret: the secret itself and its
// base64 cores.
func patternsOf(s string) []pattern {
	out := []pattern{{b: []byte(s), s: s}}
	if len(s) < minBase64Len {
		return out
	}
	for align := range 3 {
		buf := make([]byte, align+len(s))
		copy(buf[align:], s)
		// Character k holds bits [6k, 6k+6); the secret holds
		// [8·align, 8·(align+len)).
		first := (8*align + 5) / 6
		last := 8*(align+len(s))/6 - 1
		std := base64.RawStdEncoding.EncodeToString(buf)[first : last+1]
		url := base64.RawURLEncoding.EncodeToString(buf)[first : last+1]
		out = append(out,
			pattern{b: []byte(std), s: std, base64: stdBase64},
			pattern{b: []byte(url), s: url, base64: urlBase64})
	}
	return out
}

// Outcomes of matching a pattern at a position.
const (
	noMatch = iota
	// partial: the text ends inside what could still become a match.
	partial
	full
)

// matchBudget bounds the work of one match: only a literal "%" or "\" in a
// secret can make two spellings plausible at once (the byte itself, or the
// start of an escape), and a text built to make them branch gets no further
// than this many tries beyond the secret's length. The literal spelling is
// tried first, so the secret as it is always matches within the budget.
const matchBudget = 64

// text is what the matcher reads: a string, or bytes read in place.
type text interface{ ~string | ~[]byte }

// matchAt matches p against t from i and returns the end of the match.
func matchAt[T text](t T, i int, p []byte) (end, outcome int) {
	end, outcome, _ = matchFrom(t, i, p, 0, len(p)+matchBudget)
	return end, outcome
}

// matchFrom matches p[j:] against t from i, with budget tries left.
func matchFrom[T text](t T, i int, p []byte, j, budget int) (end, outcome, left int) {
	for j < len(p) {
		if i >= len(t) {
			return i, partial, budget
		}
		c := t[i]
		if c == p[j] && c != '%' && c != '\\' {
			i, j = i+1, j+1
			continue
		}
		outcome := noMatch
		if c == p[j] {
			// A literal "%" or "\" in the secret, or the start of an
			// escape: try both.
			if budget--; budget < 0 {
				return i, noMatch, budget
			}
			var end int
			end, outcome, budget = matchFrom(t, i+1, p, j+1, budget)
			if outcome == full {
				return end, full, budget
			}
		}
		n, k, o := unit(t, i, p[j:])
		switch {
		case o == full:
			i, j = i+n, j+k
			continue
		case o == partial || outcome == partial:
			return len(t), partial, budget
		}
		return i, noMatch, budget
	}
	return i, full, budget
}

// unit reads one escape at t[i] that spells the start of p (a byte, or a
// rune's bytes for \u): it returns the text bytes n it takes and the
// pattern bytes k it spells. partial: t ends inside an escape that could.
func unit[T text](t T, i int, p []byte) (n, k, outcome int) {
	switch t[i] {
	case '+':
		if p[0] == ' ' {
			return 1, 1, full
		}
	case '%':
		v, n, o := hexAt(t, i+1, 2)
		if o == partial {
			return 0, 0, partial
		}
		if o == full && byte(v) == p[0] {
			return 1 + n, 1, full
		}
	case '\\':
		if i+1 >= len(t) {
			return 0, 0, partial
		}
		if b, ok := shortEscape(t[i+1]); ok {
			if b == p[0] {
				return 2, 1, full
			}
			return 0, 0, noMatch
		}
		if t[i+1] != 'u' {
			return 0, 0, noMatch
		}
		r, n, o := jsonRune(t, i)
		if o != full {
			return 0, 0, o
		}
		var buf [utf8.UTFMax]byte
		w := utf8.EncodeRune(buf[:], r)
		if w > len(p) || string(buf[:w]) != string(p[:w]) {
			return 0, 0, noMatch
		}
		return n, w, full
	}
	return 0, 0, noMatch
}

// jsonRune reads \uXXXX at t[i], and a second \uXXXX after a high
// surrogate.
func jsonRune[T text](t T, i int) (r rune, n, outcome int) {
	v, _, o := hexAt(t, i+2, 4)
	if o != full {
		return 0, 0, o
	}
	r = rune(v)
	if !utf16.IsSurrogate(r) {
		return r, 6, full
	}
	if i+6 >= len(t) || i+7 >= len(t) && t[i+6] == '\\' {
		return 0, 0, partial
	}
	if t[i+6] != '\\' || t[i+7] != 'u' {
		return 0, 0, noMatch
	}
	lo, _, o := hexAt(t, i+8, 4)
	if o != full {
		return 0, 0, o
	}
	r = utf16.DecodeRune(r, rune(lo))
	if r == utf8.RuneError {
		return 0, 0, noMatch
	}
	return r, 12, full
}

// hexAt reads n hex digits at t[i].
func hexAt[T text](t T, i, n int) (v, read, outcome int) {
	for k := range n {
		if i+k >= len(t) {
			return 0, 0, partial
		}
		d := hexDigit(t[i+k])
		if d < 0 {
			return 0, 0, noMatch
		}
		v = v<<4 | d
	}
	return v, n, full
}

func hexDigit(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// shortEscape is the byte a JSON two-character escape \c stands for.
func shortEscape(c byte) (byte, bool) {
	switch c {
	case '"', '\\', '/':
		return c, true
	case 'b':
		return '\b', true
	case 'f':
		return '\f', true
	case 'n':
		return '\n', true
	case 'r':
		return '\r', true
	case 't':
		return '\t', true
	}
	return 0, false
}

// firstBytes are the bytes a match that starts at t[i] can spell first
// (the byte itself, and what an escape there stands for); partial when t
// ends inside an escape.
func firstBytes[T text](t T, i int, out *[3]byte) (n int, isPartial bool) {
	c := t[i]
	out[0], n = c, 1
	switch c {
	case '+':
		out[1], n = ' ', 2
	case '%':
		v, _, o := hexAt(t, i+1, 2)
		switch o {
		case partial:
			return n, true
		case full:
			out[1], n = byte(v), 2
		}
	case '\\':
		if i+1 >= len(t) {
			return n, true
		}
		if b, ok := shortEscape(t[i+1]); ok {
			out[1], n = b, 2
		} else if t[i+1] == 'u' {
			r, _, o := jsonRune(t, i)
			switch o {
			case partial:
				return n, true
			case full:
				var buf [utf8.UTFMax]byte
				utf8.EncodeRune(buf[:], r)
				out[1], n = buf[0], 2
			}
		}
	}
	return n, false
}

// maxQuickPatterns is the most patterns surelyClean searches for one by
// one; with more, the single pass of replaced is quicker.
const maxQuickPatterns = 16

// surelyClean reports, by a quick test that has no false "true", that t
// holds no secret: no pattern occurs in it as it is (strings.Index and
// bytes.Index are vectorised), and it has no escape that could spell a
// byte of one or begin a second encoding (a few IndexByte passes). It is
// the common case, and costs a fraction of a full pass. index and
// indexByte are strings' or bytes' functions for T.
func surelyClean[T text](set *secretSet, t T, index func(T, *pattern) int, indexByte func(T, byte) int) bool {
	if len(set.patterns) > maxQuickPatterns {
		return false
	}
	for _, esc := range []byte{'%', '\\', '+'} {
		if esc == '+' && !set.inPattern[' '] {
			continue
		}
		for i := 0; i < len(t); i++ {
			k := indexByte(t[i:], esc)
			if k < 0 {
				break
			}
			i += k
			if mayBeEscape(set, t, i) {
				return false
			}
		}
	}
	for k := range set.patterns {
		if index(t, &set.patterns[k]) >= 0 {
			return false
		}
	}
	return true
}

// mayBeEscape reports whether the escape that begins at t[i] can stand
// for a byte of a secret, or for a byte that begins another escape (text
// decoded from JSON is read again); one that t ends inside of can.
func mayBeEscape[T text](set *secretSet, t T, i int) bool {
	var first [3]byte
	n, isPartial := firstBytes(t, i, &first)
	if isPartial {
		return true
	}
	return n == 2 && (set.inPattern[first[1]] || escapeByte(first[1]))
}
