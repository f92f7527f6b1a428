package jsonenc

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strconv"
	"unicode/utf8"
)

const hex = "0123456789abcdef"

// AppendString appends s as a JSON string, as encoding/json does with
// SetEscapeHTML(false): invalid UTF-8 becomes U+FFFD, and U+2028 and U+2029
// are escaped.
func AppendString(dst []byte, s string) []byte { return appendString(dst, s, false) }

// AppendStringEscapeHTML is AppendString as json.Marshal writes a string,
// with <, > and & escaped too (\u003c, \u003e, \u0026).
func AppendStringEscapeHTML(dst []byte, s string) []byte { return appendString(dst, s, true) }

// appendString is encoding/json's appendString (Go 1.26).
func appendString(dst []byte, s string, escapeHTML bool) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && (!escapeHTML || b != '<' && b != '>' && b != '&') {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				// bytes below 0x20 but for the five above, and <, > and &
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// AppendFloat appends f as encoding/json writes a float64: like %g, but
// with exponents only below 1e-6 and from 1e21, unpadded. NaN and the
// infinities are encoding/json's UnsupportedValueError.
func AppendFloat(dst []byte, f float64) ([]byte, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return dst, &json.UnsupportedValueError{Value: reflect.ValueOf(f), Str: strconv.FormatFloat(f, 'g', -1, 64)}
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// e-09 becomes e-9
		if n := len(dst); n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst, nil
}

var rawMessage = reflect.TypeFor[json.RawMessage]()

// AppendRaw appends a json.RawMessage as encoding/json does: null when nil,
// else compacted, and an error when it is not valid JSON.
func AppendRaw(dst []byte, raw json.RawMessage) ([]byte, error) {
	if raw == nil {
		return append(dst, "null"...), nil
	}
	return AppendCompact(dst, raw, rawMessage)
}

// AppendCompact appends what a MarshalJSON method of type t returned,
// compacted as encoding/json does; an error, as encoding/json's, names t.
func AppendCompact(dst, src []byte, t reflect.Type) ([]byte, error) {
	buf := bytes.NewBuffer(dst)
	if err := json.Compact(buf, src); err != nil {
		return dst, &json.MarshalerError{Type: t, Err: err}
	}
	return buf.Bytes(), nil
}
