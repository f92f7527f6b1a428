package redact

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/symbi-dev/symbi/provider"
)

func TestRedactorJSON(t *testing.T) {
	var x Redactor
	x.Add("s<cr&t")
	x.Add("1234")
	x.Add("ab") // too short to redact
	for _, tc := range []struct{ in, want string }{
		{`{"a":"no secret here","b":2}`, `{"a":"no secret here","b":2}`},
		{`{"a":"x s\u003ccr\u0026t y"}`, `{"a":"x [redacted] y"}`},
		{`{"a":"x s<cr&t y"}`, `{"a":"x [redacted] y"}`},
		{`{"a":"\u0073<cr&t"}`, `{"a":"[redacted]"}`},
		{`{"pin":12345,"ab":"ab"}`, `{"pin":"[redacted]","ab":"ab"}`},
		{`["s<cr&t",{"s<cr&t":1}]`, `["[redacted]",{"[redacted]":1}]`},
		{`{"a":"\u003c not a secret"}`, `{"a":"\u003c not a secret"}`},
	} {
		got := string(x.JSON([]byte(tc.in)))
		if got != tc.want {
			t.Errorf("json(%s) = %s, want %s", tc.in, got, tc.want)
		}
		if !json.Valid([]byte(got)) {
			t.Errorf("json(%s) = %s is not JSON", tc.in, got)
		}
	}
}

func TestRedactorStream(t *testing.T) {
	var x Redactor
	if show, hold := x.Stream("no secrets: shown at once"); show != "no secrets: shown at once" || hold != "" {
		t.Errorf("without secrets: %q %q", show, hold)
	}
	x.Add("secret-value")
	x.Add("sec2")
	var out strings.Builder
	held := ""
	for _, d := range []string{"a se", "cret-v", "alue and sec", "2 and se", "cond"} {
		show, hold := x.Stream(held + d)
		if len(hold) >= len("secret-value") {
			t.Errorf("held %q, longer than the longest secret less one", hold)
		}
		out.WriteString(show)
		held = hold
	}
	out.WriteString(held)
	if want := "a [redacted] and [redacted] and second"; out.String() != want {
		t.Errorf("streamed %q, want %q", out.String(), want)
	}
}

// TestRedactorEncodedForms finds a secret however an echo may have
// encoded it: URL query and path escaping in either hex case, form
// encoding, JSON escapes, base64 in both alphabets, padded or not, alone or
// inside a longer value at each of the three alignments.
func TestRedactorEncodedForms(t *testing.T) {
	const secret = "tok/e2e=K+y Z~9"
	var x Redactor
	x.Add(secret)
	b64 := func(enc *base64.Encoding, s string) string { return enc.EncodeToString([]byte(s)) }
	for _, form := range []string{
		secret,
		url.QueryEscape(secret),
		url.PathEscape(secret),
		lowerHex(url.QueryEscape(secret)),
		strings.ReplaceAll(url.QueryEscape(secret), "+", "%20"),
		"tok%2Fe2e=K%2by%20Z~9", // escaped by hand, mixed
		`tok\/e2e\u003dK+y Z~9`,
		`\u0074\u006F\u006b\u002f\u0065\u0032\u0065\u003d\u004b\u002b\u0079\u0020\u005a\u007e\u0039`,
		b64(base64.StdEncoding, secret),
		b64(base64.RawStdEncoding, secret),
		b64(base64.URLEncoding, secret),
		b64(base64.RawURLEncoding, secret),
		url.QueryEscape(b64(base64.StdEncoding, secret)),
	} {
		for _, wrap := range []string{"%s", "before %s after", "a:%s:z"} {
			in := fmt.Sprintf(wrap, form)
			got := x.Text(in)
			if strings.Contains(got, form) || !strings.Contains(got, redactedText) {
				t.Errorf("text(%q) = %q", in, got)
			}
		}
	}
	// Inside a longer base64 value: "Basic " + base64(user:secret), at
	// every alignment, and with more after it.
	for _, prefix := range []string{"", "u", "us", "use", "user:"} {
		for _, suffix := range []string{"", "!", "!!", "!!!"} {
			for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawURLEncoding} {
				whole := b64(enc, prefix+secret+suffix)
				got := x.Text("Authorization: Basic " + whole)
				// What is left must not decode to anything holding the
				// secret's middle.
				if strings.Contains(got, whole[len(whole)/2-3:len(whole)/2+3]) || !strings.Contains(got, redactedText) {
					t.Errorf("base64 of %q: %q", prefix+secret+suffix, got)
				}
			}
		}
	}
	// Ordinary text passes untouched, escapes and all.
	for _, in := range []string{"100% sure", `C:\path\to`, "a+b=c", "dG9r", `\u0074ok`, "tok/e2e", "%", `\`, `\u00`} {
		if got := x.Text(in); got != in {
			t.Errorf("text(%q) = %q, want it unchanged", in, got)
		}
	}
}

// lowerHex writes the %XX escapes of s in lower case.
func lowerHex(s string) string {
	b := []byte(s)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' {
			b[i+1], b[i+2] = byte(unicode.ToLower(rune(b[i+1]))), byte(unicode.ToLower(rune(b[i+2])))
		}
	}
	return string(b)
}

// TestRedactorLiteralEscapeBytes has secrets that contain "%" and "\":
// each may be the byte itself or the start of an escape, and the matcher
// tries both.
func TestRedactorLiteralEscapeBytes(t *testing.T) {
	var x Redactor
	x.Add(`p%41ss\nword`)
	x.Add("%25%25")
	for in, want := range map[string]string{
		`p%41ss\nword`:         redactedText,
		`p%2541ss%5Cnword`:     redactedText,
		`p\u002541ss\\nword`:   redactedText,
		"x %25%25 y":           "x " + redactedText + " y",
		"x %2525%25 y":         "x " + redactedText + " y",
		`pAss` + "\n" + `word`: `pAss` + "\n" + `word`, // the escapes decoded are not the secret
	} {
		if got := x.Text(in); got != want {
			t.Errorf("text(%q) = %q, want %q", in, got, want)
		}
	}
	// A text built to branch at every byte ends within the budget.
	var y Redactor
	y.Add(strings.Repeat("%", 40))
	in := strings.Repeat("%25", 200)
	if got := y.Text(in); strings.Contains(got, strings.Repeat("%", 40)) {
		t.Errorf("text(%q) = %q", in, got)
	}
}

// TestRedactorJSONKeepsOrder redacts inside a JSON value and leaves the
// rest of it byte for byte: member order, spacing, escapes elsewhere.
func TestRedactorJSONKeepsOrder(t *testing.T) {
	const secret = "tok/e2e=K"
	var x Redactor
	x.Add(secret)
	for _, tc := range []struct{ in, want string }{
		{`{"z":1, "a":"tok%2Fe2e%3DK","m":"\u003c"}`, `{"z":1, "a":"[redacted]","m":"\u003c"}`},
		{`{"out":"{\"k\":\"tok\\/e2e\\u003dK\"}"}`, `{"out":"{\"k\":\"[redacted]\"}"}`},
		{`["x", "dG9rL2UyZT1L"]`, `["x", "[redacted]"]`},
		{`{"a":"no secret \"here\""}`, `{"a":"no secret \"here\""}`},
		{`not json tok/e2e=K`, `not json [redacted]`},
		{`{"a":"unterminated tok/e2e=K`, `{"a":"unterminated [redacted]`},
		{`{"a": truex tok/e2e=K}`, `{"a": truex [redacted]}`},
	} {
		got := string(x.JSON([]byte(tc.in)))
		if got != tc.want {
			t.Errorf("json(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

// TestRedactorStreamEncoded holds back the end of a delta that could be
// the start of an encoded secret, and shows it once it is not.
func TestRedactorStreamEncoded(t *testing.T) {
	var x Redactor
	x.Add("tok/e2e=K")
	var out strings.Builder
	held := ""
	for _, d := range []string{"a tok", "%2", "Fe2e", "%3", "DK and 50", "%", " off \\", "u0074ok"} {
		show, hold := x.Stream(held + d)
		out.WriteString(show)
		held = hold
	}
	out.WriteString(held)
	if want := `a [redacted] and 50% off \u0074ok`; out.String() != want {
		t.Errorf("streamed %q, want %q", out.String(), want)
	}
}

// TestRedactorMessages takes secrets out of what a provider would receive
// and copies only when something changed.
func TestRedactorMessages(t *testing.T) {
	var x Redactor
	msgs := []provider.Message{
		{Role: provider.User, Content: "use key sk-abc-123"},
		{Role: provider.Assistant, ToolCalls: []provider.ToolCall{{ID: "1", Name: "get", Arguments: `{"q":"sk-abc-123"}`}}},
		{Role: provider.ToolRole, ToolCallID: "1", Name: "get", Content: `{"echo":"sk%2Dabc%2D123"}`},
	}
	if got := x.Messages(msgs); &got[0] != &msgs[0] {
		t.Error("no secrets: the messages were copied")
	}
	x.Add("sk-abc-123")
	got := x.Messages(msgs)
	if got[0].Content != "use key [redacted]" || got[1].ToolCalls[0].Arguments != `{"q":"[redacted]"}` || got[2].Content != `{"echo":"[redacted]"}` {
		t.Errorf("messages: %+v", got)
	}
	if msgs[1].ToolCalls[0].Arguments != `{"q":"sk-abc-123"}` || msgs[0].Content != "use key sk-abc-123" {
		t.Error("messages changed its argument")
	}
	clean := []provider.Message{{Role: provider.User, Content: "nothing here"}}
	if got := x.Messages(clean); &got[0] != &clean[0] {
		t.Error("nothing to redact: the messages were copied")
	}
}

// FuzzRedactor checks the Redactor's promises on any text: no secret is
// left as it is or in the spelling the fuzzer chose for it, JSON stays
// valid JSON, and text without a secret streams through unchanged.
func FuzzRedactor(f *testing.F) {
	f.Add("before ", " after", "tok/e2e=K+y", uint64(0))
	f.Add(`{"a":"`, `"}`, `p%41\ss`, uint64(0x5555))
	f.Add("\\u00", "%", "sk-ünï-€𝄞", uint64(0xffff))
	f.Fuzz(func(t *testing.T, before, after, secret string, spelling uint64) {
		if len(secret) < minSecretLen || len(secret) > 64 || strings.ContainsAny(secret, "[]") || strings.Contains(redactedText, secret) {
			t.Skip()
		}
		var x Redactor
		x.Add(secret)
		enc := spell(secret, spelling)
		in := before + enc + after
		got := x.Text(in)
		if strings.Contains(got, secret) {
			t.Errorf("text(%q) = %q keeps the secret %q", in, got, secret)
		}
		if strings.Contains(got, enc) {
			t.Errorf("text(%q) = %q keeps the secret spelled %q", in, got, enc)
		}
		// JSON: the same text as a string member, and a value without it.
		// (A secret that is not UTF-8 cannot be carried by JSON, which
		// holds U+FFFD in its place: the decoded text may then hold its
		// bytes inside U+FFFD's own.)
		b, _ := json.Marshal(map[string]string{"k": in, before: after})
		out := x.JSON(b)
		if !json.Valid(out) {
			t.Fatalf("json(%s) = %s is not JSON", b, out)
		}
		var m map[string]string
		if err := json.Unmarshal(out, &m); err != nil {
			t.Fatal(err)
		}
		for k, v := range m {
			if utf8.ValidString(secret) && (strings.Contains(k, secret) || strings.Contains(v, secret)) {
				t.Errorf("json(%s) = %s keeps the secret", b, out)
			}
		}
		// The quick test never calls clean what the full pass redacts.
		set := x.load()
		for _, text := range []string{in, before + after, string(b), before} {
			if found, _, _ := replaced(set, text, false); found != nil && (set.cleanString(text) || set.cleanBytes([]byte(text))) {
				t.Errorf("surelyClean(%q) but the full pass redacts it to %q", text, found)
			}
		}
		// A stream in pieces shows no secret; text without one is shown
		// whole.
		for _, text := range []string{in, before + after} {
			var shown strings.Builder
			held := ""
			for i := 0; i < len(text); i += 3 {
				show, hold := x.Stream(held + text[i:min(i+3, len(text))])
				shown.WriteString(show)
				held = hold
			}
			shown.WriteString(held)
			if strings.Contains(shown.String(), secret) {
				t.Errorf("streamed %q as %q", text, shown.String())
			}
			if x.Text(text) == text && shown.String() != text {
				t.Errorf("streamed %q as %q, want it unchanged", text, shown.String())
			}
		}
	})
}

// spell writes s with each rune spelled as the bits of choice say: itself,
// its bytes as %XX in upper or lower case, or a JSON \u escape (a byte
// that is not UTF-8 cannot be one: it is written as it is).
func spell(s string, choice uint64) string {
	var b strings.Builder
	for i, k := 0, 0; i < len(s); k++ {
		r, size := utf8.DecodeRuneInString(s[i:])
		raw := s[i : i+size]
		i += size
		switch c := choice >> (2 * (uint(k) % 32)) & 3; {
		case c == 0 || c == 3 && r == utf8.RuneError && size == 1:
			b.WriteString(raw)
		case c == 3:
			for _, u := range utf16.Encode([]rune{r}) {
				fmt.Fprintf(&b, `\u%04x`, u)
			}
		default:
			for j := 0; j < len(raw); j++ {
				if c == 1 {
					fmt.Fprintf(&b, "%%%02X", raw[j])
				} else {
					fmt.Fprintf(&b, "%%%02x", raw[j])
				}
			}
		}
	}
	return b.String()
}

// TestRequestCache sends a growing conversation through the cache: a
// message holding a secret is redacted on every call, a message changed
// in place is read again, and a secret added later is found in messages
// the cache had already passed as clean.
func TestRequestCache(t *testing.T) {
	var x Redactor
	var c RequestCache
	x.Add("sk-abc-123")
	conv := []provider.Message{
		{Role: provider.System, Content: "be brief"},
		{Role: provider.User, Content: "hi"},
	}
	if got := c.Messages(&x, conv); &got[0] != &conv[0] {
		t.Error("a clean conversation was copied")
	}
	conv = append(conv, provider.Message{Role: provider.ToolRole, Content: "echo sk-abc-123"}, provider.Message{Role: provider.User, Content: "more"})
	for range 2 {
		got := c.Messages(&x, conv)
		if got[2].Content != "echo [redacted]" || got[3].Content != "more" || len(got) != 4 {
			t.Errorf("messages: %+v", got)
		}
	}
	conv[1].Content = "my key is sk-abc-123" // changed in place
	if got := c.Messages(&x, conv); got[1].Content != "my key is [redacted]" {
		t.Errorf("a message changed in place was not read again: %+v", got[1])
	}
	// Context fitting drops the middle; the rest is still known.
	fitted := []provider.Message{conv[0], conv[3]}
	if got := c.Messages(&x, fitted); &got[0] != &fitted[0] || len(c.keys) != 2 {
		t.Errorf("fitted: %+v, %d keys", got, len(c.keys))
	}
	x.Add("be brief")
	if got := c.Messages(&x, fitted); got[0].Content != "[redacted]" {
		t.Errorf("a new secret was not looked for in cached messages: %+v", got[0])
	}
}

// BenchmarkRedactorJSON is the Redactor's cost on a journal line that
// holds no secret (the common case) with one secret registered, per byte.
//
//	go test -run '^$' -bench RedactorJSON ./engine/internal/redact/
func BenchmarkRedactorJSON(b *testing.B) {
	var x Redactor
	x.Add("sk-bench-5f8e2a91c4d7")
	line, _ := json.Marshal(map[string]any{
		"call_id": "call_7", "tool": "search", "duration_ms": 12,
		"output": strings.Repeat("Results for \"symbi\": 3 pages, 100% relevant <b>a+b</b>\n", 20),
	})
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	for b.Loop() {
		if out := x.JSON(line); len(out) != len(line) {
			b.Fatal("changed")
		}
	}
}
