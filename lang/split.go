package lang

import (
	"bytes"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// splitThreshold is the file size from which parseFile parses a file block
// by block. A variable so tests can force the split on small files.
var splitThreshold = 256 << 10

// parseFile parses one configuration file. A large file is parsed one
// top-level block at a time: hclsyntax lexes a whole input into one token
// slice before parsing it, and on a file of many megabytes growing and
// walking that slice costs more than linear time, so a configuration ten
// times larger would take far more than ten times as long to compile.
//
// The result is the same as hclsyntax.ParseConfig's. The file is cut only
// before lines that look like a block header at column 1 ("tool "x" {"),
// each piece is parsed from its own position in the file, so every range is
// the one a whole-file parse gives, and the pieces' bodies are joined. A cut
// that falls inside anything (a block, a heredoc, a comment, a bracketed
// expression) leaves the piece before it unterminated, which is a parse
// error; on any error the file is parsed again whole, so diagnostics are
// exactly hclsyntax's.
func parseFile(src []byte, name string) (*hcl.File, hcl.Diagnostics) {
	if len(src) < splitThreshold {
		return hclsyntax.ParseConfig(src, name, hcl.InitialPos)
	}
	cuts := blockStarts(src)
	if len(cuts) < 2 {
		return hclsyntax.ParseConfig(src, name, hcl.InitialPos)
	}
	// The navigation (the "in tool "x"" context of a diagnostic) is a type
	// hclsyntax keeps to itself; take the one an empty parse returns and
	// fill in the body it points at.
	f, _ := hclsyntax.ParseConfig(nil, name, hcl.InitialPos)
	joined, ok := f.Body.(*hclsyntax.Body)
	if !ok {
		return hclsyntax.ParseConfig(src, name, hcl.InitialPos)
	}
	joined.Attributes = hclsyntax.Attributes{}
	var diags hcl.Diagnostics
	pos := hcl.InitialPos
	for i, start := range cuts {
		end := len(src)
		if i+1 < len(cuts) {
			end = cuts[i+1]
		}
		pf, ds := hclsyntax.ParseConfig(src[start:end], name, pos)
		if ds.HasErrors() {
			return hclsyntax.ParseConfig(src, name, hcl.InitialPos)
		}
		diags = append(diags, ds...)
		body, ok := pf.Body.(*hclsyntax.Body)
		if !ok {
			return hclsyntax.ParseConfig(src, name, hcl.InitialPos)
		}
		for k, a := range body.Attributes {
			if _, dup := joined.Attributes[k]; dup {
				// hclsyntax reports a duplicate argument; let it.
				return hclsyntax.ParseConfig(src, name, hcl.InitialPos)
			}
			joined.Attributes[k] = a
		}
		joined.Blocks = append(joined.Blocks, body.Blocks...)
		if i == 0 {
			joined.SrcRange.Start = body.SrcRange.Start
		}
		joined.SrcRange.End = body.SrcRange.End
		joined.EndRange = body.EndRange
		pos = advance(pos, src[start:end])
	}
	joined.SrcRange.Filename = name
	f.Bytes = src
	return f, diags
}

// blockStarts returns the byte offsets the file is cut at: 0, then the start
// of every later line that begins with an identifier at column 1 and ends in
// "{". Whether a cut is really between two top-level items is left to the
// parser (see parseFile).
func blockStarts(src []byte) []int {
	cuts := []int{0}
	for i := 0; i < len(src); {
		nl := bytes.IndexByte(src[i:], '\n')
		end := len(src)
		if nl >= 0 {
			end = i + nl
		}
		if i > 0 && isIdentStart(src[i]) {
			line := bytes.TrimRight(src[i:end], " \t\r")
			if len(line) > 0 && line[len(line)-1] == '{' {
				cuts = append(cuts, i)
			}
		}
		if nl < 0 {
			break
		}
		i = end + 1
	}
	return cuts
}

func isIdentStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_'
}

// advance returns the position of the line after b, read from p: every
// piece but the last ends in a newline, and only the next piece's start is
// needed.
func advance(p hcl.Pos, b []byte) hcl.Pos {
	p.Byte += len(b)
	p.Line += bytes.Count(b, []byte{'\n'})
	p.Column = 1
	return p
}
