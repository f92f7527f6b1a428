package jsonenc

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
)

// marshal is encoding/json's form of v, HTML escaping off, without the
// Encoder's newline.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

var stringSeeds = []string{
	"", "plain", `quote " and \ backslash`, "\x00\x01\b\f\n\r\t\x1f\x7f", "<html> & friends",
	"héllo wörld ✓", "\u2028\u2029", "bad \xff utf-8 \xc3", "\xed\xa0\x80 surrogate", "emoji 🦀 and \U0010FFFF",
}

func FuzzAppendString(f *testing.F) {
	for _, s := range stringSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendString([]byte("x"), s); !bytes.Equal(got, append([]byte("x"), want...)) {
			t.Fatalf("AppendString(%q) = %s, encoding/json %s", s, got[1:], want)
		}
		want, err = json.Marshal(s) // HTML escaping on
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendStringEscapeHTML([]byte("x"), s); !bytes.Equal(got, append([]byte("x"), want...)) {
			t.Fatalf("AppendStringEscapeHTML(%q) = %s, json.Marshal %s", s, got[1:], want)
		}
	})
}

func FuzzAppendFloat(f *testing.F) {
	for _, v := range []float64{0, math.Copysign(0, -1), 1, -1, 0.1, 1e-6, 9.99999e-7, 1e-7, 1e20, 1e21, 123456789012345678901234.0,
		math.MaxFloat64, math.SmallestNonzeroFloat64, 5e-324, 1.5e-300, -2.5e300, math.NaN(), math.Inf(1), math.Inf(-1)} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v float64) {
		want, wantErr := marshal(v)
		got, err := AppendFloat(nil, v)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("AppendFloat(%v): error %v, encoding/json's %v", v, err, wantErr)
		}
		if err != nil {
			if err.Error() != wantErr.Error() {
				t.Fatalf("AppendFloat(%v): error %q, encoding/json's %q", v, err, wantErr)
			}
			return
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("AppendFloat(%v) = %s, encoding/json %s", v, got, want)
		}
	})
}

func FuzzAppendRaw(f *testing.F) {
	for _, s := range []string{"", "null", `{ "a" : [1, 2, {"b": "c d"}] }`, " 12 ", `"x`, "{", "[1,]", "\"\u2028<>&\"", "\t\n true \r"} {
		f.Add([]byte(s), false)
	}
	f.Add([]byte(nil), true)
	f.Fuzz(func(t *testing.T, b []byte, isNil bool) {
		raw := json.RawMessage(b)
		if isNil {
			raw = nil
		}
		want, wantErr := marshal(raw)
		got, err := AppendRaw([]byte("x"), raw)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("AppendRaw(%q): error %v, encoding/json's %v", b, err, wantErr)
		}
		if err != nil {
			if err.Error() != wantErr.Error() {
				t.Fatalf("AppendRaw(%q): error %q, encoding/json's %q", b, err, wantErr)
			}
			if string(got) != "x" {
				t.Fatalf("AppendRaw(%q) failed but left %q", b, got)
			}
			return
		}
		if !bytes.Equal(got, append([]byte("x"), want...)) {
			t.Fatalf("AppendRaw(%q) = %s, encoding/json %s", b, got[1:], want)
		}
	})
}
