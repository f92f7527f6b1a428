package lang

import (
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// TestFileSuffix ends the name of every test file (`symbi test`): a file
// of run blocks beside the configuration it tests, as Terraform's
// *.tftest.hcl. A directory's configuration leaves such files out.
const TestFileSuffix = ".symbitest.hcl"

// IsTestFile says whether a file name is a test file's.
func IsTestFile(name string) bool { return strings.HasSuffix(name, TestFileSuffix) }

// TestFile is one decoded test file: its attributes (config), its
// variables block and its run blocks, with every expression still raw.
type TestFile struct {
	Name      string
	File      *hcl.File
	Attrs     hcl.Attributes
	Variables []*Block // more than one is diagnosed here
	Runs      []*Block
}

// TestFileSchema is the schema of a test file's top level: the attributes,
// and the block types with theirs.
func TestFileSchema() (attrs []string, blocks map[string]*Schema) {
	budget := TopLevel()["budget"].Attrs
	return []string{"config"}, map[string]*Schema{
		"variables": {Open: true},
		"run": {Labels: named,
			Attrs: []string{"agent", "best_of_n", "input", "cassette", "script", "expect_failures", "repeat", "pass_rate"},
			Multi: map[string]bool{"assert": true, "override_tool": true, "override_mcp_server": true},
			Blocks: map[string]*Schema{
				"variables":           {Open: true},
				"budget":              {Attrs: budget},
				"override_tool":       {Attrs: []string{"target", "result", "error", "command"}},
				"override_mcp_server": {Attrs: []string{"target", "command", "url"}},
				"assert":              {Attrs: []string{"condition", "error_message"}},
			}},
	}
}

// ParseTestFile parses and decodes one test file. It returns every
// diagnostic it finds and whatever it could decode; what the expressions
// mean is checked by package symbitest.
func ParseTestFile(src Source) (*TestFile, hcl.Diagnostics) {
	tf := &TestFile{Name: src.Name}
	if pos, ok := tooDeep(src.Bytes); ok {
		rng := hcl.Range{Filename: src.Name, Start: pos, End: pos}
		tf.File = &hcl.File{Bytes: src.Bytes, Body: hcl.EmptyBody()}
		return tf, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Nesting too deep",
			Detail:   fmt.Sprintf("Brackets are nested more than %d deep here; no test file needs that, and the parser's time would grow with it.", MaxNesting),
			Subject:  &rng,
		}}
	}
	f, diags := parseFile(src.Bytes, src.Name)
	if f == nil {
		tf.File = &hcl.File{Bytes: src.Bytes, Body: hcl.EmptyBody()}
		return tf, diags
	}
	tf.File = f
	if diags.HasErrors() {
		return tf, diags
	}
	attrs, blocks := TestFileSchema()
	root := &hcl.BodySchema{}
	for _, a := range attrs {
		root.Attributes = append(root.Attributes, hcl.AttributeSchema{Name: a})
	}
	for _, t := range []string{"variables", "run"} {
		root.Blocks = append(root.Blocks, hcl.BlockHeaderSchema{Type: t, LabelNames: blocks[t].Labels})
	}
	content, ds := f.Body.Content(root)
	diags = append(diags, ds...)
	tf.Attrs = content.Attributes
	for _, hb := range content.Blocks {
		b, ds := decodeBlock(hb, blocks[hb.Type])
		diags = append(diags, ds...)
		switch hb.Type {
		case "variables":
			if len(tf.Variables) > 0 {
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Duplicate variables block",
					Detail:   fmt.Sprintf("A test file has one variables block; the first is at %s.", tf.Variables[0].DefRange),
					Subject:  hb.DefRange.Ptr(),
				})
			}
			tf.Variables = append(tf.Variables, b)
		case "run":
			tf.Runs = append(tf.Runs, b)
		}
	}
	return tf, diags
}
