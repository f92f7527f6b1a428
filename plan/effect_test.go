package plan

import "testing"

func TestStricterEffect(t *testing.T) {
	order := []string{EffectNone, EffectRead, EffectWrite, EffectDestructive}
	for i, a := range order {
		for j, b := range order {
			want := a
			if j > i {
				want = b
			}
			if got := StricterEffect(a, b); got != want {
				t.Errorf("StricterEffect(%q, %q) = %q, want %q", a, b, got, want)
			}
		}
		if got := StricterEffect(a, ""); got != a {
			t.Errorf("StricterEffect(%q, \"\") = %q, want %q", a, got, a)
		}
		if got := StricterEffect("", a); got != a {
			t.Errorf("StricterEffect(\"\", %q) = %q, want %q", a, got, a)
		}
		// An unknown effect is never taken for a weaker one.
		if got := StricterEffect(a, "harmless"); effectRank(got) != 3 {
			t.Errorf("StricterEffect(%q, \"harmless\") = %q, want it ranked as destructive", a, got)
		}
	}
}
