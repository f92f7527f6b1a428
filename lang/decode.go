package lang

import (
	"fmt"
	"regexp"
	"sort"
	"sync"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// Block is one decoded block: its attributes as raw expressions and its
// nested blocks in source order.
type Block struct {
	Type      string
	Name      string // first label, empty for unlabelled blocks
	Attrs     hcl.Attributes
	Blocks    []*Block
	DefRange  hcl.Range // the block header, for diagnostics about the block
	TypeRange hcl.Range
	Range     hcl.Range // the whole block
}

// Address is TYPE.NAME, the form references take.
func (b *Block) Address() string { return b.Type + "." + b.Name }

// Nested returns the nested blocks of one type, in source order.
func (b *Block) Nested(typ string) []*Block {
	var out []*Block
	for _, n := range b.Blocks {
		if n.Type == typ {
			out = append(out, n)
		}
	}
	return out
}

// One returns the single nested block of one type, or nil.
func (b *Block) One(typ string) *Block {
	for _, n := range b.Blocks {
		if n.Type == typ {
			return n
		}
	}
	return nil
}

// SortedAttrs returns the attributes in source order, for deterministic output.
func SortedAttrs(attrs hcl.Attributes) []*hcl.Attribute {
	out := make([]*hcl.Attribute, 0, len(attrs))
	for _, a := range attrs {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool {
		ri, rj := out[i].Range, out[j].Range
		if ri.Filename != rj.Filename {
			return ri.Filename < rj.Filename
		}
		return ri.Start.Byte < rj.Start.Byte
	})
	return out
}

// Module is every block of one configuration, across its files, in file
// order then source order.
type Module struct {
	Files     map[string]*hcl.File
	Settings  []*Block // symbi blocks; more than one is diagnosed by interp
	Variables []*Block
	Locals    []*hcl.Attribute
	Blocks    []*Block // every other top-level block
}

// Source is one configuration file's name (as it should appear in
// diagnostics) and content.
type Source struct {
	Name  string
	Bytes []byte
}

var nameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z0-9_]*$`) })

// Parse parses and decodes the files of one configuration. It returns every
// diagnostic it finds and whatever it could decode.
func Parse(srcs []Source) (*Module, hcl.Diagnostics) {
	m := &Module{Files: make(map[string]*hcl.File, len(srcs))}
	var diags hcl.Diagnostics
	top := TopLevel()
	rootSchema := &hcl.BodySchema{}
	types := make([]string, 0, len(top))
	for t := range top {
		types = append(types, t)
	}
	sort.Strings(types)
	for _, t := range types {
		rootSchema.Blocks = append(rootSchema.Blocks, hcl.BlockHeaderSchema{Type: t, LabelNames: top[t].Labels})
	}
	for _, src := range srcs {
		if pos, ok := tooDeep(src.Bytes); ok {
			rng := hcl.Range{Filename: src.Name, Start: pos, End: pos}
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Nesting too deep",
				Detail:   fmt.Sprintf("Brackets are nested more than %d deep here; no configuration needs that, and the parser's time would grow with it.", MaxNesting),
				Subject:  &rng,
			})
			m.Files[src.Name] = &hcl.File{Bytes: src.Bytes, Body: hcl.EmptyBody()}
			continue
		}
		f, ds := parseFile(src.Bytes, src.Name)
		diags = append(diags, ds...)
		if f == nil {
			continue
		}
		m.Files[src.Name] = f
		if ds.HasErrors() {
			// A file that does not parse would only add noise from partial blocks.
			continue
		}
		content, ds := f.Body.Content(rootSchema)
		diags = append(diags, ds...)
		for _, hb := range content.Blocks {
			diags = append(diags, m.decodeTop(hb, top[hb.Type])...)
		}
	}
	return m, diags
}

// decodeTop dispatches one top-level block by its type.
func (m *Module) decodeTop(hb *hcl.Block, s *Schema) hcl.Diagnostics {
	switch hb.Type {
	case "locals":
		return m.decodeLocalsBlock(hb)
	case "variable":
		b, diags := decodeBlock(hb, s)
		m.Variables = append(m.Variables, b)
		return diags
	case "symbi":
		b, diags := decodeBlock(hb, s)
		m.Settings = append(m.Settings, b)
		return diags
	default:
		b, diags := decodeBlock(hb, s)
		m.Blocks = append(m.Blocks, b)
		return diags
	}
}

func (m *Module) decodeLocalsBlock(hb *hcl.Block) hcl.Diagnostics {
	attrs, diags := hb.Body.JustAttributes()
	m.Locals = append(m.Locals, SortedAttrs(attrs)...)
	return diags
}

// decodeBlock checks a block against its schema, recursively.
func decodeBlock(hb *hcl.Block, s *Schema) (*Block, hcl.Diagnostics) {
	b := &Block{Type: hb.Type, DefRange: hb.DefRange, TypeRange: hb.TypeRange}
	if sb, ok := hb.Body.(*hclsyntax.Body); ok {
		b.Range = sb.SrcRange
	} else {
		b.Range = hb.DefRange
	}
	var diags hcl.Diagnostics
	if len(hb.Labels) > 0 {
		b.Name = hb.Labels[0]
		if !nameRE().MatchString(b.Name) {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid name",
				Detail:   fmt.Sprintf("The %s name %q must start with a lowercase letter and contain only lowercase letters, digits and underscores.", hb.Type, b.Name),
				Subject:  hb.LabelRanges[0].Ptr(),
			})
		}
	}
	if s.Open {
		attrs, ds := hb.Body.JustAttributes()
		b.Attrs = attrs
		return b, append(diags, ds...)
	}
	content, ds := hb.Body.Content(s.body())
	diags = append(diags, ds...)
	b.Attrs = content.Attributes
	seen := map[string]*hcl.Block{}
	for _, nb := range content.Blocks {
		if prev, dup := seen[nb.Type]; dup && !s.Multi[nb.Type] {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  fmt.Sprintf("Duplicate %s block", nb.Type),
				Detail:   fmt.Sprintf("Only one %s block is allowed in a %s block; the first is at %s.", nb.Type, hb.Type, prev.DefRange),
				Subject:  nb.DefRange.Ptr(),
			})
			continue
		}
		seen[nb.Type] = nb
		child, ds := decodeBlock(nb, s.Blocks[nb.Type])
		diags = append(diags, ds...)
		b.Blocks = append(b.Blocks, child)
	}
	return b, diags
}

// MaxNesting is how deep brackets may nest in a configuration file.
const MaxNesting = 256

// tooDeep finds the first bracket nested deeper than MaxNesting, skipping
// quoted strings and comments. It is a guard, not a parser: it runs before
// parsing so that hostile input cannot make the parser recurse without bound.
func tooDeep(b []byte) (hcl.Pos, bool) {
	depth, line, col := 0, 1, 1
	inStr, lineComment, blockComment := false, false, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case lineComment:
			if c == '\n' {
				lineComment = false
			}
		case blockComment:
			if c == '*' && i+1 < len(b) && b[i+1] == '/' {
				blockComment = false
			}
		case inStr:
			if c == '\\' {
				i++
			} else if c == '"' || c == '\n' {
				inStr = false
			}
		case c == '"':
			inStr = true
		case c == '#':
			lineComment = true
		case c == '/' && i+1 < len(b) && b[i+1] == '/':
			lineComment = true
		case c == '/' && i+1 < len(b) && b[i+1] == '*':
			blockComment = true
		case c == '(' || c == '[' || c == '{':
			depth++
			if depth > MaxNesting {
				return hcl.Pos{Line: line, Column: col, Byte: i}, true
			}
		case c == ')' || c == ']' || c == '}':
			depth--
		}
		if c == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return hcl.Pos{}, false
}
