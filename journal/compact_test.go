package journal

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

var compactCases = []struct {
	in   string
	want bool
}{
	{`{}`, true}, {`[]`, true}, {`""`, true}, {`0`, true}, {`-0.5e+10`, true},
	{`1E9`, true}, {`true`, true}, {`false`, true}, {`null`, true},
	{`{"a":[1,{"b":"c\"\\\/\b\f\n\r\t\u00e9"}],"d":null}`, true},
	{"\"caf\xc3\xa9 \xff\"", true}, // invalid UTF-8 is kept, as json.Compact keeps it
	{``, false}, {` {}`, false}, {`{} `, false}, {`{"a": 1}`, false}, {"[1,\n2]", false},
	{`{"a":1,}`, false}, {`[1,]`, false}, {`{"a"}`, false}, {`{a:1}`, false},
	{`01`, false}, {`-`, false}, {`1.`, false}, {`.5`, false}, {`1e`, false}, {`1e+`, false},
	{`+1`, false}, {`tru`, false}, {`nul`, false}, {`"abc`, false}, {`"\x"`, false},
	{`"\u12g4"`, false}, {`"\u12"`, false}, {"\"a\nb\"", false}, {"\"\t\"", false},
	{`{}{}`, false}, {`[1]]`, false}, {`{"a":1`, false}, {`[`, false}, {`"\`, false},
	{strings.Repeat("[", 10001) + strings.Repeat("]", 10001), false},
}

func TestIsCompactJSON(t *testing.T) {
	for _, c := range compactCases {
		if got := isCompactJSON([]byte(c.in)); got != c.want {
			t.Errorf("isCompactJSON(%.40q) = %v, want %v", c.in, got, c.want)
		}
	}
}

// FuzzIsCompactJSON: whatever isCompactJSON accepts, json.Compact accepts
// and leaves unchanged; and compact valid JSON is accepted.
func FuzzIsCompactJSON(f *testing.F) {
	for _, c := range compactCases {
		f.Add([]byte(c.in))
	}
	f.Add(benchData)
	f.Fuzz(func(t *testing.T, b []byte) {
		var out bytes.Buffer
		err := json.Compact(&out, b)
		if isCompactJSON(b) {
			if err != nil {
				t.Fatalf("accepted %q, which json.Compact refuses: %v", b, err)
			}
			if !bytes.Equal(out.Bytes(), b) {
				t.Fatalf("accepted %q, which json.Compact changes to %q", b, out.Bytes())
			}
			if bytes.ContainsAny(b, "\r\n") {
				t.Fatalf("accepted %q, which holds a line break", b)
			}
		} else if err == nil && bytes.Equal(out.Bytes(), b) {
			t.Fatalf("refused %q, which is compact JSON", b)
		}
	})
}

// BenchmarkCompactData compares the writer's fast path with the
// json.Compact it replaces for data that is compact already.
func BenchmarkCompactData(b *testing.B) {
	b.Run("isCompactJSON", func(b *testing.B) {
		b.SetBytes(int64(len(benchData)))
		for b.Loop() {
			if !isCompactJSON(benchData) {
				b.Fatal("not compact")
			}
		}
	})
	b.Run("json.Compact", func(b *testing.B) {
		var out bytes.Buffer
		b.SetBytes(int64(len(benchData)))
		for b.Loop() {
			out.Reset()
			if err := json.Compact(&out, benchData); err != nil {
				b.Fatal(err)
			}
		}
	})
}
