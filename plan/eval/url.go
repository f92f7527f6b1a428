package eval

import (
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/symbi-dev/symbi/plan"
)

// URL evaluates a URL kept for run time (an http tool's or an MCP
// server's url that calls env()). The template's literal text is the URL's
// structure, written by the configuration's author; the value of every
// interpolation is data, percent-encoded (EscapeURLData) for the part of
// the URL it lands in, so a token holding + & = # / % or a space reaches the
// server exactly as the environment holds it: "?key=${env("KEY")}" with a
// key "a+b" sends key=a%2Bb, never a space.
//
// Two places take a value as it is: an interpolation that starts the URL
// (a base URL from the environment, "${env("API")}/v1/search") gives the
// scheme and host, and one inside the host gives a host name, which must
// then hold none of / ? # @ or spaces. An expression that is not a template
// (env("URL") alone) is the whole URL, taken as it is.
func URL(s plan.String, lookupEnv func(string) (string, bool)) (string, error) {
	return New(lookupEnv).URL(s)
}

// URL is the package's URL, with this evaluator's parses and function
// table.
func (x *Evaluator) URL(s plan.String) (string, error) {
	if s.Deferred == nil {
		return s.Value, nil
	}
	expr, diags := x.parse(*s.Deferred)
	if diags.HasErrors() {
		return "", fmt.Errorf("%s: %w", s.Deferred.Range, diags)
	}
	tmpl, ok := expr.(*hclsyntax.TemplateExpr)
	if !ok {
		return x.String(s)
	}
	ctx := &hcl.EvalContext{Functions: x.functions()}
	parts := make([]urlPart, len(tmpl.Parts))
	for i, p := range tmpl.Parts {
		if lit, ok := p.(*hclsyntax.LiteralValueExpr); ok && lit.Val.Type() == cty.String && lit.Val.IsKnown() && !lit.Val.IsNull() {
			parts[i] = urlPart{text: lit.Val.AsString(), literal: true}
			continue
		}
		if v, ok := x.exactEnv(p); ok {
			parts[i] = urlPart{text: v}
			continue
		}
		v, ds := p.Value(ctx)
		if ds.HasErrors() {
			return "", fmt.Errorf("%s: %w", s.Deferred.Range, ds)
		}
		v, err := convert.Convert(v, cty.String)
		if err != nil || v.IsNull() || !v.IsKnown() {
			return "", fmt.Errorf("%s: every interpolation of the URL must give a string", s.Deferred.Range)
		}
		parts[i] = urlPart{text: v.AsString()}
	}
	u, err := assembleURL(parts)
	if err != nil {
		return "", fmt.Errorf("%s: %w", s.Deferred.Range, err)
	}
	return u, nil
}

// urlPart is one part of a URL template: literal text, or an
// interpolation's value.
type urlPart struct {
	text    string
	literal bool
}

// urlScheme is a scheme and the "//" of an authority, as a template's
// literal text starts a URL.
var urlScheme = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*://`) })

// assembleURL joins the parts, each interpolation escaped for its place.
// The places are found on a skeleton in which each interpolation is one
// NUL byte, so a value's own characters never move a boundary.
func assembleURL(parts []urlPart) (string, error) {
	var skel strings.Builder
	for _, p := range parts {
		if p.literal {
			skel.WriteString(p.text)
		} else {
			skel.WriteByte(0)
		}
	}
	sk := skel.String()
	// authority is [authStart, authEnd), its host from hostStart; a
	// template that starts with an interpolation takes it as the base.
	authStart, authEnd, hostStart := 0, 0, 0
	base := len(sk) > 0 && sk[0] == 0
	if m := urlScheme().FindString(sk); m != "" {
		authStart = len(m)
		authEnd = len(sk)
		if i := strings.IndexAny(sk[authStart:], "/?#"); i >= 0 {
			authEnd = authStart + i
		}
		hostStart = authStart
		if i := strings.LastIndexByte(sk[authStart:authEnd], '@'); i >= 0 {
			hostStart = authStart + i + 1
		}
	}
	var b strings.Builder
	at := 0 // position in the skeleton
	for _, p := range parts {
		if p.literal {
			b.WriteString(p.text)
			at += len(p.text)
			continue
		}
		switch {
		case at == 0 && base:
			b.WriteString(p.text)
		case at >= hostStart && at < authEnd:
			if strings.ContainsAny(p.text, "/?#@ \t\r\n") {
				return "", fmt.Errorf("a value interpolated into the URL's host is not a host name")
			}
			b.WriteString(p.text)
		default: // user information, path, query or fragment
			b.WriteString(EscapeURLData(p.text))
		}
		at++
	}
	return b.String(), nil
}

// EscapeURLData percent-encodes every byte of s but the unreserved ones
// (A-Z a-z 0-9 - . _ ~), the form a value takes wherever it lands in a URL's
// user information, path, query or fragment: each decodes back to s, and
// none of + & = / ? # can be read as structure.
func EscapeURLData(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}
