package builtins

import (
	"math"
	"math/big"
	"strconv"
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

// FuzzEvalArithmetic: any text either fails or evaluates to a finite
// number that stays the same in parentheses and changes sign behind a
// minus (unless the wrapping goes past a limit).
func FuzzEvalArithmetic(f *testing.F) {
	for _, s := range []string{"6*7", "-(2^3)%5", "((1))", "1e3/.5", "2^-1", "1-2-3", "2^3^2", "-2^2", "7%-3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := evalArithmetic(s) // must not panic or recurse without bound
		if err != nil {
			return
		}
		if math.IsInf(v, 0) || math.IsNaN(v) {
			t.Fatalf("%q = %v, not a finite number", s, v)
		}
		for _, w := range []struct {
			expr string
			want float64
		}{{"(" + s + ")", v}, {"-(" + s + ")", -v}, {"0 - (" + s + ")", 0 - v}} {
			got, err := evalArithmetic(w.expr)
			if err != nil && !strings.Contains(err.Error(), "nested deeper") && !strings.Contains(err.Error(), "longer than") {
				t.Fatalf("%q = %v but %q fails: %v", s, v, w.expr, err)
			}
			if err == nil && math.Float64bits(got) != math.Float64bits(w.want) {
				t.Fatalf("%q = %v but %q = %v, want %v", s, v, w.expr, got, w.want)
			}
		}
	})
}

// FuzzEvalArithmeticTree builds an expression tree from the input, writes
// it out (with the parentheses its precedence needs, and some it does not)
// and checks evalArithmetic against two evaluations of the tree itself: in
// float64, operation by operation, which must agree to the bit (or both
// fail); and exactly, in big.Rat, which must agree wherever every value on
// the way is a float64 exactly (so IEEE arithmetic cannot round).
func FuzzEvalArithmeticTree(f *testing.F) {
	for _, b := range [][]byte{
		{3, 0, 7, 1, 9},             // a sum of two leaves
		{5, 3, 2, 11, 4, 0, 23, 6},  // nested, with a power
		{9, 7, 1, 200, 3, 2, 0, 15}, // unary minus over a modulo
	} {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		g := &treeGen{data: data}
		n := g.node(0)
		src := n.render(g, 0)
		got, err := evalArithmetic(src)
		if len(src) > maxExprLen {
			if err == nil {
				t.Fatalf("%d characters evaluated: %v", len(src), got)
			}
			return
		}
		want, ok := n.float()
		if ok && (math.IsInf(want, 0) || math.IsNaN(want)) {
			ok = false
		}
		if !ok {
			if err == nil {
				t.Fatalf("%q = %v; the tree %s has no finite value", src, got, n)
			}
			return
		}
		if err != nil {
			t.Fatalf("%q: %v; the tree %s is %v", src, err, n, want)
		}
		if math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("%q = %v; the tree %s is %v in float64", src, got, n, want)
		}
		if exact, ok := n.exact(); ok {
			if f, isExact := exact.Float64(); isExact && f != got {
				t.Fatalf("%q = %v; the tree %s is exactly %v", src, got, n, exact.RatString())
			}
		}
	})
}

// calcNode is an arithmetic expression: a literal (op 0), a unary '-' or '+'
// (x), or a binary operator (x op y).
type calcNode struct {
	op   byte
	lit  string
	x, y *calcNode
}

// treeGen reads a tree from fuzz bytes; once they run out every node is a
// literal.
type treeGen struct {
	data []byte
	pos  int
}

func (g *treeGen) byte() byte {
	if g.pos >= len(g.data) {
		return 0
	}
	g.pos++
	return g.data[g.pos-1]
}

func (g *treeGen) node(depth int) *calcNode {
	b := g.byte()
	if depth >= 8 || g.pos >= len(g.data) {
		b = 0
	}
	switch op := "\x00\x00+-*/%^-+"[b%10]; op {
	case 0:
		return &calcNode{lit: g.literal()}
	case '-', '+':
		if b%10 >= 8 {
			return &calcNode{op: 'u' + op, x: g.node(depth + 1)} // unary
		}
		fallthrough
	default:
		return &calcNode{op: op, x: g.node(depth + 1), y: g.node(depth + 1)}
	}
}

// literal writes a number in one of the forms evalArithmetic reads.
func (g *treeGen) literal() string {
	b := g.byte()
	v := int(b >> 2)
	switch b % 4 {
	case 0:
		return strconv.Itoa(v)
	case 1:
		return strconv.FormatFloat(float64(v)/10, 'f', -1, 64) // 2.5, 0.1
	case 2:
		return "." + strconv.Itoa(v) // .5, .25
	default:
		return strconv.Itoa(v) + []string{"e3", "E-1", "e+2", "e0"}[v%4]
	}
}

// Precedence levels, lowest first: a child below the level its place needs
// is written in parentheses.
const (
	levelSum = iota + 1
	levelProduct
	levelUnary
	levelPower
	levelPrimary
)

func (n *calcNode) level() int {
	switch n.op {
	case 0:
		return levelPrimary
	case '+', '-':
		return levelSum
	case '*', '/', '%':
		return levelProduct
	case '^':
		return levelPower
	}
	return levelUnary
}

// render writes n where a node of at least level need may stand, with
// spaces and superfluous parentheses as g's bytes say.
func (n *calcNode) render(g *treeGen, need int) string {
	var s string
	switch n.level() {
	case levelPrimary:
		s = n.lit
	case levelUnary:
		s = string(n.op-'u') + n.x.render(g, levelUnary)
	case levelPower:
		// ^ is right associative and its exponent may carry a sign: 2^-1.
		s = n.x.render(g, levelPrimary) + "^" + n.y.render(g, levelUnary)
	case levelSum:
		s = n.x.render(g, levelSum) + " " + string(n.op) + " " + n.y.render(g, levelProduct)
	case levelProduct:
		s = n.x.render(g, levelProduct) + string(n.op) + n.y.render(g, levelUnary)
	}
	if n.level() < need || g.byte()%7 == 0 {
		return "(" + s + ")"
	}
	return s
}

func (n *calcNode) String() string {
	switch n.level() {
	case levelPrimary:
		return n.lit
	case levelUnary:
		return "(" + string(n.op-'u') + n.x.String() + ")"
	}
	return "(" + n.x.String() + " " + string(n.op) + " " + n.y.String() + ")"
}

// float evaluates n in float64 as the calculator's documentation says, one
// operation at a time; false for a division or modulo by zero.
func (n *calcNode) float() (float64, bool) {
	if n.op == 0 {
		v, err := strconv.ParseFloat(n.lit, 64)
		return v, err == nil
	}
	x, ok := n.x.float()
	if !ok {
		return 0, false
	}
	if n.y == nil {
		if n.op == 'u'+'-' {
			return -x, true
		}
		return x, true
	}
	y, ok := n.y.float()
	if !ok {
		return 0, false
	}
	switch n.op {
	case '+':
		return x + y, true
	case '-':
		return x - y, true
	case '*':
		return x * y, true
	case '/':
		return x / y, y != 0
	case '%':
		return math.Mod(x, y), y != 0
	}
	return math.Pow(x, y), true
}

// exact evaluates n in rationals, or reports false where that says nothing
// about float64: a value that is not exactly a float64 (IEEE arithmetic
// rounds it), a division by zero, or a power other than a small integer
// one.
func (n *calcNode) exact() (*big.Rat, bool) {
	r, ok := n.exactValue()
	if !ok {
		return nil, false
	}
	if _, isExact := r.Float64(); !isExact {
		return nil, false
	}
	return r, true
}

func (n *calcNode) exactValue() (*big.Rat, bool) {
	if n.op == 0 {
		return new(big.Rat).SetString(n.lit)
	}
	x, ok := n.x.exact()
	if !ok {
		return nil, false
	}
	if n.y == nil {
		if n.op == 'u'+'-' {
			return new(big.Rat).Neg(x), true
		}
		return x, true
	}
	y, ok := n.y.exact()
	if !ok {
		return nil, false
	}
	z := new(big.Rat)
	switch n.op {
	case '+':
		return z.Add(x, y), true
	case '-':
		return z.Sub(x, y), true
	case '*':
		return z.Mul(x, y), true
	case '/', '%':
		if y.Sign() == 0 {
			return nil, false
		}
		z.Quo(x, y)
		if n.op == '/' {
			return z, true
		}
		// x % y = x - y*trunc(x/y): the remainder has the dividend's sign.
		q := new(big.Int).Quo(z.Num(), z.Denom())
		return z.Sub(x, new(big.Rat).Mul(y, new(big.Rat).SetInt(q))), true
	}
	// ^: integer powers of integers, whose every partial product is an
	// integer a float64 holds exactly while the result is one.
	if !x.IsInt() || !y.IsInt() || y.Sign() < 0 || y.Num().Cmp(big.NewInt(64)) > 0 {
		return nil, false
	}
	z.SetInt(new(big.Int).Exp(x.Num(), y.Num(), nil))
	if z.Num().BitLen() > 53 {
		return nil, false
	}
	return z, true
}
