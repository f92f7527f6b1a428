package journal

// isCompactJSON reports whether b is exactly one valid JSON value with no
// insignificant whitespace: what json.Compact would return unchanged. It is
// the writer's fast path, so it only has to be right when it says yes; on
// anything it does not accept (whitespace, invalid JSON, nesting deeper than
// encoding/json allows) the writer falls back to json.Compact, which reports
// the error or removes the whitespace. Strings may hold any byte from 0x20
// up, invalid UTF-8 included, as json.Compact and the reader allow; a raw
// control character (a newline among them) is refused, so an accepted value
// can never split a journal line. FuzzIsCompactJSON holds it to
// encoding/json.
func isCompactJSON(b []byte) bool {
	i, ok := compactValue(b, 0, 0)
	return ok && i == len(b)
}

// maxCompactDepth is encoding/json's nesting limit: deeper values are left
// to json.Compact, which refuses them.
const maxCompactDepth = 10000

func compactValue(b []byte, i, depth int) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	switch c := b[i]; {
	case c == '{':
		if depth >= maxCompactDepth {
			return i, false
		}
		i++
		if i < len(b) && b[i] == '}' {
			return i + 1, true
		}
		for {
			var ok bool
			if i >= len(b) || b[i] != '"' {
				return i, false
			}
			if i, ok = compactString(b, i); !ok {
				return i, false
			}
			if i >= len(b) || b[i] != ':' {
				return i, false
			}
			if i, ok = compactValue(b, i+1, depth+1); !ok {
				return i, false
			}
			if i >= len(b) {
				return i, false
			}
			switch b[i] {
			case ',':
				i++
			case '}':
				return i + 1, true
			default:
				return i, false
			}
		}
	case c == '[':
		if depth >= maxCompactDepth {
			return i, false
		}
		i++
		if i < len(b) && b[i] == ']' {
			return i + 1, true
		}
		for {
			var ok bool
			if i, ok = compactValue(b, i, depth+1); !ok {
				return i, false
			}
			if i >= len(b) {
				return i, false
			}
			switch b[i] {
			case ',':
				i++
			case ']':
				return i + 1, true
			default:
				return i, false
			}
		}
	case c == '"':
		return compactString(b, i)
	case c == 't':
		return compactLiteral(b, i, "true")
	case c == 'f':
		return compactLiteral(b, i, "false")
	case c == 'n':
		return compactLiteral(b, i, "null")
	case c == '-' || ('0' <= c && c <= '9'):
		return compactNumber(b, i)
	}
	return i, false
}

func compactLiteral(b []byte, i int, lit string) (int, bool) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return i, false
	}
	return i + len(lit), true
}

// compactString checks the string starting at b[i] == '"' and returns the
// index after its closing quote.
func compactString(b []byte, i int) (int, bool) {
	i++
	for i < len(b) {
		c := b[i]
		switch {
		case c == '"':
			return i + 1, true
		case c < 0x20:
			return i, false
		case c == '\\':
			if i+1 >= len(b) {
				return i, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if len(b)-i < 6 {
					return i, false
				}
				for _, h := range b[i+2 : i+6] {
					if !isHex(h) {
						return i, false
					}
				}
				i += 6
			default:
				return i, false
			}
		default:
			i++
		}
	}
	return i, false
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// compactNumber checks a number per the JSON grammar:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func compactNumber(b []byte, i int) (int, bool) {
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		i = digits(b, i)
	default:
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return i, false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return i, false
		}
		i = j
	}
	return i, true
}

func digits(b []byte, i int) int {
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}
