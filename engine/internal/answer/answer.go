package answer

import "strings"

// JSONObject returns the outermost {...} of text: models often wrap the
// JSON they were asked for in prose or a code fence.
func JSONObject(text string) (string, bool) {
	i := strings.IndexByte(text, '{')
	j := strings.LastIndexByte(text, '}')
	if i < 0 || j < i {
		return "", false
	}
	return text[i : j+1], true
}

// Clip returns s cut to its first n bytes, with "…" when it was longer.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
