package builtins

import (
	"errors"
	"fmt"
	"math"
	"strconv"
)

// Limits that keep a hostile expression from exhausting the stack or CPU.
const (
	maxExprLen   = 4096
	maxExprDepth = 64
)

// evalArithmetic evaluates + - * / % ^, parentheses, unary minus and
// decimals. It is a recursive-descent parser over float64; nothing is
// executed but arithmetic. ^ binds tighter than unary minus and is right
// associative, so -2^2 is -4 and 2^3^2 is 512.
func evalArithmetic(s string) (float64, error) {
	if len(s) > maxExprLen {
		return 0, fmt.Errorf("expression longer than %d characters", maxExprLen)
	}
	p := &calcParser{src: s}
	v, err := p.expr(0)
	if err != nil {
		return 0, err
	}
	p.space()
	if p.pos < len(p.src) {
		return 0, fmt.Errorf("unexpected %q at position %d", p.src[p.pos], p.pos+1)
	}
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, errors.New("result is not a finite number")
	}
	return v, nil
}

type calcParser struct {
	src string
	pos int
}

func (p *calcParser) space() {
	for p.pos < len(p.src) && (p.src[p.pos] == ' ' || p.src[p.pos] == '\t' || p.src[p.pos] == '\n') {
		p.pos++
	}
}

func (p *calcParser) peek() byte {
	p.space()
	if p.pos < len(p.src) {
		return p.src[p.pos]
	}
	return 0
}

func (p *calcParser) expr(depth int) (float64, error) {
	if depth > maxExprDepth {
		return 0, fmt.Errorf("expression nested deeper than %d", maxExprDepth)
	}
	v, err := p.term(depth)
	if err != nil {
		return 0, err
	}
	for {
		switch p.peek() {
		case '+', '-':
			op := p.src[p.pos]
			p.pos++
			w, err := p.term(depth)
			if err != nil {
				return 0, err
			}
			if op == '+' {
				v += w
			} else {
				v -= w
			}
		default:
			return v, nil
		}
	}
}

func (p *calcParser) term(depth int) (float64, error) {
	v, err := p.unary(depth)
	if err != nil {
		return 0, err
	}
	for {
		switch p.peek() {
		case '*', '/', '%':
			op := p.src[p.pos]
			at := p.pos + 1
			p.pos++
			w, err := p.unary(depth)
			if err != nil {
				return 0, err
			}
			switch op {
			case '*':
				v *= w
			case '/':
				if w == 0 {
					return 0, fmt.Errorf("division by zero at position %d", at)
				}
				v /= w
			case '%':
				if w == 0 {
					return 0, fmt.Errorf("modulo by zero at position %d", at)
				}
				v = math.Mod(v, w)
			}
		default:
			return v, nil
		}
	}
}

func (p *calcParser) unary(depth int) (float64, error) {
	if depth > maxExprDepth {
		return 0, fmt.Errorf("expression nested deeper than %d", maxExprDepth)
	}
	switch p.peek() {
	case '-':
		p.pos++
		v, err := p.unary(depth + 1)
		return -v, err
	case '+':
		p.pos++
		return p.unary(depth + 1)
	}
	return p.power(depth)
}

func (p *calcParser) power(depth int) (float64, error) {
	base, err := p.primary(depth)
	if err != nil {
		return 0, err
	}
	if p.peek() != '^' {
		return base, nil
	}
	p.pos++
	exp, err := p.unary(depth + 1)
	if err != nil {
		return 0, err
	}
	return math.Pow(base, exp), nil
}

func (p *calcParser) primary(depth int) (float64, error) {
	c := p.peek()
	switch {
	case c == '(':
		p.pos++
		v, err := p.expr(depth + 1)
		if err != nil {
			return 0, err
		}
		if p.peek() != ')' {
			return 0, fmt.Errorf("missing ) at position %d", p.pos+1)
		}
		p.pos++
		return v, nil
	case c == '.' || (c >= '0' && c <= '9'):
		start := p.pos
		for p.pos < len(p.src) && (p.src[p.pos] == '.' || (p.src[p.pos] >= '0' && p.src[p.pos] <= '9')) {
			p.pos++
		}
		// An exponent (1e3, 2.5E-4) is part of the number, not an operator.
		if p.pos < len(p.src) && (p.src[p.pos] == 'e' || p.src[p.pos] == 'E') {
			q := p.pos + 1
			if q < len(p.src) && (p.src[q] == '+' || p.src[q] == '-') {
				q++
			}
			if q < len(p.src) && p.src[q] >= '0' && p.src[q] <= '9' {
				for q < len(p.src) && p.src[q] >= '0' && p.src[q] <= '9' {
					q++
				}
				p.pos = q
			}
		}
		v, err := strconv.ParseFloat(p.src[start:p.pos], 64)
		if err != nil {
			return 0, fmt.Errorf("bad number %q at position %d", p.src[start:p.pos], start+1)
		}
		return v, nil
	case c == 0:
		return 0, errors.New("unexpected end of expression")
	default:
		return 0, fmt.Errorf("unexpected %q at position %d", c, p.pos+1)
	}
}

func formatNumber(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', 15, 64)
}
