package repl

import (
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/symbi-dev/symbi/journal"
)

// NeedsMore reports whether buffer, the input so far, is incomplete: a
// bracket, parenthesis, brace, template interpolation or heredoc is still
// open. The terminal then reads another line and joins it to the buffer.
// A blank last line ends the input whatever is open, as in Terraform's
// console, so a typo cannot trap the user.
func (s *Session) NeedsMore(buffer string) bool {
	lines := strings.Split(buffer, "\n")
	if strings.TrimSpace(lines[len(lines)-1]) == "" {
		return false
	}
	// The newline the user just typed ends a heredoc's closing line.
	tokens, _ := hclsyntax.LexExpression([]byte(buffer+"\n"), InputName, hcl.InitialPos)
	var open []hclsyntax.TokenType
	pop := func(want ...hclsyntax.TokenType) bool {
		if len(open) == 0 {
			return false
		}
		top := open[len(open)-1]
		for _, w := range want {
			if top == w {
				open = open[:len(open)-1]
				return true
			}
		}
		return false
	}
	for _, t := range tokens {
		switch t.Type {
		case hclsyntax.TokenOBrace, hclsyntax.TokenOBrack, hclsyntax.TokenOParen,
			hclsyntax.TokenOHeredoc, hclsyntax.TokenTemplateInterp, hclsyntax.TokenTemplateControl:
			open = append(open, t.Type)
		case hclsyntax.TokenCBrace:
			if !pop(hclsyntax.TokenOBrace) {
				return false
			}
		case hclsyntax.TokenCBrack:
			if !pop(hclsyntax.TokenOBrack) {
				return false
			}
		case hclsyntax.TokenCParen:
			if !pop(hclsyntax.TokenOParen) {
				return false
			}
		case hclsyntax.TokenCHeredoc:
			if !pop(hclsyntax.TokenOHeredoc) {
				return false
			}
		case hclsyntax.TokenTemplateSeqEnd:
			if !pop(hclsyntax.TokenTemplateInterp, hclsyntax.TokenTemplateControl) {
				return false
			}
		}
	}
	return len(open) > 0
}

// Complete returns the completions of the word that prefix (the line up to
// the cursor) ends with: command names after ':', a command's first
// argument (addresses, agents, policies, tools, run ids, paths), and in
// expressions function names, the scope's roots (var, local, agent, ...)
// and attribute paths such as agent.researcher.loop.mode.
func (s *Session) Complete(prefix string) []string {
	_, words := s.CompleteAt(prefix)
	return words
}

// CompleteAt is Complete, also returning where the completed word starts
// in prefix: each completion replaces prefix[start:].
func (s *Session) CompleteAt(prefix string) (start int, words []string) {
	trimmed := strings.TrimLeft(prefix, " \t")
	lead := len(prefix) - len(trimmed)
	if strings.HasPrefix(trimmed, ":") {
		name, rest, hasArgs := strings.Cut(trimmed, " ")
		if !hasArgs {
			return lead, withPrefix(commandNames(), name)
		}
		cmd, ok := lookupCommand(name)
		if !ok {
			return len(prefix), nil
		}
		argStart := len(prefix) - len(strings.TrimLeft(rest, " "))
		arg := prefix[argStart:]
		if !strings.ContainsAny(arg, " \t\n") && cmd.arg != argNone {
			return argStart, s.completeArg(cmd.arg, arg)
		}
		if cmd.arg != argPolicy && cmd.arg != argTool {
			return len(prefix), nil
		}
		// :gate and :call end in an expression.
	}
	wstart := len(prefix)
	for wstart > 0 && isWordByte(prefix[wstart-1]) {
		wstart--
	}
	return wstart, s.completeExpr(prefix[wstart:])
}

func isWordByte(b byte) bool {
	return b == '_' || b == '-' || b == '.' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}

func withPrefix(list []string, p string) []string {
	var out []string
	for _, x := range list {
		if strings.HasPrefix(x, p) {
			out = append(out, x)
		}
	}
	return out
}

func (s *Session) completeArg(kind argKind, word string) []string {
	switch kind {
	case argCommand:
		names := commandNames()
		if !strings.HasPrefix(word, ":") {
			for i := range names {
				names[i] = strings.TrimPrefix(names[i], ":")
			}
		}
		return withPrefix(names, word)
	case argPath:
		return completePath(word)
	case argAddress:
		return withPrefix(append([]string{"settings"}, s.addresses()...), word)
	case argDoc:
		var names []string
		for _, f := range s.functions() {
			names = append(names, f.Name)
		}
		return withPrefix(append(names, s.addresses()...), word)
	case argRun:
		runs, _ := journal.ListRuns(s.stateDir())
		var ids []string
		for _, r := range runs {
			ids = append(ids, r.ID)
		}
		return withPrefix(ids, word)
	}
	kinds := map[argKind][]string{argAgent: {"agent."}, argRunnable: {"agent.", "best_of_n."}, argPolicy: {"policy."}, argTool: {"tool."}}
	var out []string
	for _, a := range s.addresses() {
		for _, k := range kinds[kind] {
			if strings.HasPrefix(a, k) && strings.HasPrefix(a, word) {
				out = append(out, a)
			}
		}
	}
	return out
}

// completePath completes a file or directory name: directories end in
// "/", files must be .hcl.
func completePath(word string) []string {
	dir, base := filepath.Split(word)
	read := dir
	if read == "" {
		read = "."
	}
	entries, err := os.ReadDir(read)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		n := e.Name()
		if !strings.HasPrefix(n, base) || strings.HasPrefix(n, ".") && !strings.HasPrefix(base, ".") {
			continue
		}
		switch {
		case e.IsDir():
			out = append(out, dir+n+"/")
		case strings.HasSuffix(n, ".hcl"):
			out = append(out, dir+n)
		}
	}
	return out
}

// completeExpr completes a function name or a traversal.
func (s *Session) completeExpr(word string) []string {
	scope := s.scope()
	dot := strings.LastIndexByte(word, '.')
	if dot < 0 {
		var out []string
		for _, k := range sortedKeys(scope.Variables) {
			if strings.HasPrefix(k, word) {
				out = append(out, k+".")
			}
		}
		for _, k := range sortedKeys(scope.Functions) {
			if strings.HasPrefix(k, word) {
				out = append(out, k+"(")
			}
		}
		return out
	}
	base, partial := word[:dot], word[dot+1:]
	tr, diags := hclsyntax.ParseTraversalAbs([]byte(base), InputName, hcl.InitialPos)
	if diags.HasErrors() {
		return nil
	}
	v, diags := tr.TraverseAbs(scope)
	if diags.HasErrors() || !v.IsKnown() || v.IsNull() {
		return nil
	}
	v, _ = v.UnmarkDeep()
	var names []string
	switch {
	case v.Type().IsObjectType():
		for n := range v.Type().AttributeTypes() {
			names = append(names, n)
		}
	case v.Type().IsMapType():
		for it := v.ElementIterator(); it.Next(); {
			k, _ := it.Element()
			if k.Type() == cty.String {
				names = append(names, k.AsString())
			}
		}
	}
	sort.Strings(names)
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, partial) && hclsyntax.ValidIdentifier(n) {
			out = append(out, base+"."+n)
		}
	}
	return out
}
