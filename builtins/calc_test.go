package builtins

import (
	"strings"
	"testing"
)

func TestEvalArithmetic(t *testing.T) {
	cases := []struct {
		expr string
		want string
	}{
		{"6 * 7", "42"},
		{"1 + 2 * 3", "7"},
		{"(1 + 2) * 3", "9"},
		{"-2 ^ 2", "-4"},
		{"2 ^ 3 ^ 2", "512"},
		{"2 ^ -1", "0.5"},
		{"10 % 4", "2"},
		{"7 / 2", "3.5"},
		{"--3", "3"},
		{"-(4 - 10)", "6"},
		{".5 + 0.25", "0.75"},
		{"1e3 + 1", "1001"},
		{"2.5E-1 * 4", "1"},
		{" 3 ", "3"},
		{"0.1 + 0.2", "0.3"},
	}
	for _, c := range cases {
		v, err := evalArithmetic(c.expr)
		if err != nil {
			t.Errorf("%q: %v", c.expr, err)
			continue
		}
		if got := formatNumber(v); got != c.want {
			t.Errorf("%q = %s, want %s", c.expr, got, c.want)
		}
	}
}

func TestEvalArithmeticErrors(t *testing.T) {
	cases := []struct{ expr, msg string }{
		{"", "unexpected end"},
		{"1 +", "unexpected end"},
		{"1 / 0", "division by zero at position 3"},
		{"5 % 0", "modulo by zero"},
		{"(1 + 2", "missing )"},
		{"1 + 2)", `unexpected ')' at position 6`},
		{"os.exit(1)", `unexpected 'o' at position 1`},
		{"1..2", "bad number"},
		{"10 ^ 400", "not a finite number"},
		{strings.Repeat("(", 100) + "1" + strings.Repeat(")", 100), "nested deeper"},
		{strings.Repeat("-", 100) + "1", "nested deeper"},
		{strings.Repeat("1+", 3000) + "1", "longer than"},
	}
	for _, c := range cases {
		_, err := evalArithmetic(c.expr)
		if err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%q: error %v, want one containing %q", c.expr, err, c.msg)
		}
	}
}

func FuzzEvalArithmetic(f *testing.F) {
	for _, s := range []string{"6*7", "-(2^3)%5", "((1))", "1e3/.5", "2^-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_, _ = evalArithmetic(s) // must not panic or recurse without bound
	})
}
