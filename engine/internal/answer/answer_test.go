package answer

import "testing"

func TestJSONObject(t *testing.T) {
	for _, tt := range []struct {
		text, want string
		ok         bool
	}{
		{`{"score": 1}`, `{"score": 1}`, true},
		{"Here it is:\n```json\n{\"steps\": [{\"id\": \"a\"}]}\n```\nDone.", `{"steps": [{"id": "a"}]}`, true},
		{`{"a": {"b": 1}} and {"c": 2}`, `{"a": {"b": 1}} and {"c": 2}`, true}, // outermost: first { to last }
		{"no object", "", false},
		{"} before {", "", false},
		{"", "", false},
	} {
		got, ok := JSONObject(tt.text)
		if got != tt.want || ok != tt.ok {
			t.Errorf("JSONObject(%q) = %q, %v; want %q, %v", tt.text, got, ok, tt.want, tt.ok)
		}
	}
}

func TestClip(t *testing.T) {
	if got := Clip("short", 10); got != "short" {
		t.Errorf("Clip kept %q", got)
	}
	if got := Clip("exactly", 7); got != "exactly" {
		t.Errorf("Clip at the length = %q", got)
	}
	if got := Clip("a longer text", 6); got != "a long…" {
		t.Errorf("Clip = %q", got)
	}
}
