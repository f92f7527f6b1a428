package lockfile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/symbi-dev/symbi/plan"
)

// header opens every lock file.
const header = `# This file is maintained by "symbi lock": it pins what the MCP servers and
# command tools of this configuration are. Commit it, and review a change to it
# like a change to the code: every run checks its servers and tools against it
# and, by default, refuses one that differs (on_drift). Update it with
# "symbi lock -update", which shows what changed first.
`

// Encode writes l as a lock file: servers by name, each server's tools by
// name, command tools by address, every definition indented JSON in a
// heredoc. The same lock is always the same bytes, in the layout symbi fmt
// keeps. File and Digest are not written (they describe the file).
func Encode(l *plan.Lock) []byte {
	var b bytes.Buffer
	b.WriteString(header)
	servers := append([]plan.LockedServer(nil), l.Servers...)
	sort.Slice(servers, func(i, j int) bool { return servers[i].Name < servers[j].Name })
	for _, s := range servers {
		fmt.Fprintf(&b, "\nmcp_server %s {\n", quote(s.Name))
		var attrs []attr
		if len(s.Command) > 0 {
			parts := make([]string, len(s.Command))
			for i, a := range s.Command {
				parts[i] = quote(a)
			}
			attrs = append(attrs, attr{"command", "[" + strings.Join(parts, ", ") + "]"})
		}
		attrs = appendString(attrs, "url", s.URL)
		attrs = appendString(attrs, "executable", s.Executable)
		attrs = appendString(attrs, "sha256", s.SHA256)
		attrs = appendString(attrs, "launcher", s.Launcher)
		attrs = appendString(attrs, "package", s.Package)
		attrs = appendString(attrs, "version", s.Version)
		attrs = appendString(attrs, "protocol_version", s.ProtocolVersion)
		attrs = appendString(attrs, "server_name", s.ServerName)
		attrs = appendString(attrs, "server_version", s.ServerVersion)
		writeAttrs(&b, "  ", attrs)
		tools := append([]plan.LockedTool(nil), s.Tools...)
		sort.Slice(tools, func(i, j int) bool { return tools[i].Name < tools[j].Name })
		for _, t := range tools {
			fmt.Fprintf(&b, "\n  tool %s {\n", quote(t.Name))
			if len(t.Definition) == 0 {
				writeAttrs(&b, "    ", appendString(nil, "digest", t.Digest))
			} else {
				// Aligned with the definition below it, as symbi fmt aligns.
				fmt.Fprintf(&b, "    digest     = %s\n", quote(t.Digest))
				b.WriteString("    definition = <<-EOT\n")
				for _, line := range strings.Split(Readable(t.Definition), "\n") {
					b.WriteString("      " + escapeTemplate(line) + "\n")
				}
				b.WriteString("    EOT\n")
			}
			b.WriteString("  }\n")
		}
		b.WriteString("}\n")
	}
	cmds := append([]plan.LockedTool(nil), l.CommandTools...)
	sort.Slice(cmds, func(i, j int) bool { return cmds[i].Name < cmds[j].Name })
	for _, c := range cmds {
		fmt.Fprintf(&b, "\ncommand_tool %s {\n", quote(strings.TrimPrefix(c.Name, "tool.")))
		writeAttrs(&b, "  ", appendString(appendString(nil, "executable", c.Executable), "sha256", c.SHA256))
		b.WriteString("}\n")
	}
	return b.Bytes()
}

type attr struct{ name, value string }

func appendString(attrs []attr, name, v string) []attr {
	if v == "" {
		return attrs
	}
	return append(attrs, attr{name, quote(v)})
}

// writeAttrs writes one attribute a line, their equals signs aligned as
// symbi fmt aligns them.
func writeAttrs(b *bytes.Buffer, indent string, attrs []attr) {
	width := 0
	for _, a := range attrs {
		width = max(width, len(a.name))
	}
	for _, a := range attrs {
		fmt.Fprintf(b, "%s%-*s = %s\n", indent, width, a.name, a.value)
	}
}

// quote is s as an HCL quoted string: escapes for quotes, backslashes and
// every character that does not print as itself, and the template
// introducers ${ and %{ doubled, so the value reads back exactly.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case (r == '$' || r == '%') && i+1 < len(s) && s[i+1] == '{':
			b.WriteRune(r)
			b.WriteRune(r)
		case r == ' ' || visible(r, size):
			b.WriteString(s[i : i+size])
		case r == utf8.RuneError && size == 1:
			b.WriteString(`\ufffd`) // HCL reads only UTF-8; a lock never holds invalid bytes
		case r > 0xffff:
			fmt.Fprintf(&b, `\U%08x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		i += size
	}
	b.WriteByte('"')
	return b.String()
}

// escapeTemplate doubles the template introducers of a heredoc line.
func escapeTemplate(line string) string {
	line = strings.ReplaceAll(line, "${", "$${")
	return strings.ReplaceAll(line, "%{", "%%{")
}

var (
	fileSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{
		{Type: "mcp_server", LabelNames: []string{"name"}},
		{Type: "command_tool", LabelNames: []string{"name"}},
	}}
	serverSchema = &hcl.BodySchema{
		Attributes: []hcl.AttributeSchema{
			{Name: "command"}, {Name: "url"}, {Name: "executable"}, {Name: "sha256"}, {Name: "launcher"},
			{Name: "package"}, {Name: "version"}, {Name: "protocol_version"}, {Name: "server_name"}, {Name: "server_version"},
		},
		Blocks: []hcl.BlockHeaderSchema{{Type: "tool", LabelNames: []string{"name"}}},
	}
	toolSchema    = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "digest", Required: true}, {Name: "definition", Required: true}}}
	commandSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "executable", Required: true}, {Name: "sha256", Required: true}}}
	digestRE      = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^sha256:[0-9a-f]{64}$`) })
)

// Parse reads a lock file. Every problem is a diagnostic with the range it
// is about, all of them at once; the lock returned holds what could be read.
// A definition must be JSON whose canonical form has the digest written
// beside it, and name the tool its block names: a hand edit of one without
// the other is an error, not a silent change of what is pinned. File and
// Digest are left for the caller.
func Parse(filename string, src []byte) (*plan.Lock, hcl.Diagnostics) {
	l := &plan.Lock{}
	f, diags := hclsyntax.ParseConfig(src, filename, hcl.InitialPos)
	if diags.HasErrors() {
		return l, diags
	}
	content, ds := f.Body.Content(fileSchema)
	diags = append(diags, ds...)
	servers := map[string]*hcl.Block{}
	commands := map[string]*hcl.Block{}
	for _, blk := range content.Blocks {
		switch blk.Type {
		case "mcp_server":
			if first, dup := servers[blk.Labels[0]]; dup {
				diags = append(diags, duplicate(blk, "mcp_server", first))
				continue
			}
			servers[blk.Labels[0]] = blk
			s, ds := parseServer(blk)
			diags = append(diags, ds...)
			l.Servers = append(l.Servers, s)
		case "command_tool":
			if first, dup := commands[blk.Labels[0]]; dup {
				diags = append(diags, duplicate(blk, "command_tool", first))
				continue
			}
			commands[blk.Labels[0]] = blk
			body, ds := blk.Body.Content(commandSchema)
			diags = append(diags, ds...)
			t := plan.LockedTool{Name: "tool." + blk.Labels[0]}
			t.Executable, ds = stringAttr(body.Attributes["executable"])
			diags = append(diags, ds...)
			if a := body.Attributes["executable"]; a != nil && !ds.HasErrors() && t.Executable == "" {
				diags = append(diags, attrError(a, "want the path of the executable, not an empty string"))
			}
			t.SHA256, ds = digestAttr(body.Attributes["sha256"])
			diags = append(diags, ds...)
			l.CommandTools = append(l.CommandTools, t)
		}
	}
	return l, diags
}

func duplicate(blk *hcl.Block, typ string, first *hcl.Block) *hcl.Diagnostic {
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  "Duplicate " + typ,
		Detail:   fmt.Sprintf("%s %q is pinned twice; the first is at %s.", typ, blk.Labels[0], first.DefRange),
		Subject:  blk.DefRange.Ptr(),
	}
}

func parseServer(blk *hcl.Block) (plan.LockedServer, hcl.Diagnostics) {
	s := plan.LockedServer{Name: blk.Labels[0]}
	body, diags := blk.Body.Content(serverSchema)
	if a := body.Attributes["command"]; a != nil {
		v, ds := a.Expr.Value(nil)
		diags = append(diags, ds...)
		if !ds.HasErrors() {
			if !v.Type().IsTupleType() && !v.Type().IsListType() || v.IsNull() || !v.IsWhollyKnown() {
				diags = append(diags, attrError(a, "want a list of strings"))
			} else {
				for it := v.ElementIterator(); it.Next(); {
					_, e := it.Element()
					if e.IsNull() || e.Type() != cty.String {
						diags = append(diags, attrError(a, "want a list of strings"))
						break
					}
					s.Command = append(s.Command, e.AsString())
				}
			}
		}
	}
	for _, f := range []struct {
		name string
		dst  *string
	}{
		{"url", &s.URL}, {"executable", &s.Executable}, {"launcher", &s.Launcher}, {"package", &s.Package},
		{"version", &s.Version}, {"protocol_version", &s.ProtocolVersion}, {"server_name", &s.ServerName},
		{"server_version", &s.ServerVersion},
	} {
		v, ds := stringAttr(body.Attributes[f.name])
		diags = append(diags, ds...)
		*f.dst = v
	}
	if a := body.Attributes["sha256"]; a != nil {
		var ds hcl.Diagnostics
		s.SHA256, ds = digestAttr(a)
		diags = append(diags, ds...)
	}
	if (len(s.Command) == 0) == (s.URL == "") {
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Server without one launch",
			Detail:   fmt.Sprintf("mcp_server %q must have exactly one of command and url, as its block in the configuration does.", s.Name),
			Subject:  blk.DefRange.Ptr(),
		})
	}
	tools := map[string]*hcl.Block{}
	for _, tb := range body.Blocks {
		if first, dup := tools[tb.Labels[0]]; dup {
			diags = append(diags, duplicate(tb, "tool", first))
			continue
		}
		tools[tb.Labels[0]] = tb
		t, ds := parseTool(tb)
		diags = append(diags, ds...)
		s.Tools = append(s.Tools, t)
	}
	return s, diags
}

func parseTool(blk *hcl.Block) (plan.LockedTool, hcl.Diagnostics) {
	t := plan.LockedTool{Name: blk.Labels[0]}
	body, diags := blk.Body.Content(toolSchema)
	var ds hcl.Diagnostics
	t.Digest, ds = digestAttr(body.Attributes["digest"])
	diags = append(diags, ds...)
	a := body.Attributes["definition"]
	text, ds := stringAttr(a)
	diags = append(diags, ds...)
	if a == nil || ds.HasErrors() {
		return t, diags
	}
	def, err := Canonical([]byte(text))
	if err != nil {
		return t, append(diags, attrError(a, "the definition is not JSON: "+err.Error()))
	}
	t.Definition = def
	var named struct {
		Name *string `json:"name"`
	}
	if json.Unmarshal(def, &named) != nil || named.Name == nil || *named.Name != t.Name {
		diags = append(diags, attrError(a, fmt.Sprintf("the definition must be a JSON object whose name is %q, the tool's label", t.Name)))
	}
	if t.Digest != "" && !diags.HasErrors() {
		if got := Digest(def); got != t.Digest {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Definition does not match its digest",
				Detail:   fmt.Sprintf("The definition of tool %q digests to %s, not the %s written beside it: one was edited without the other. Run \"symbi lock -update\" to pin what the server offers now.", t.Name, got, t.Digest),
				Subject:  a.Expr.Range().Ptr(),
			})
		}
	}
	return t, diags
}

// stringAttr is a literal string attribute's value; "" when a is nil.
func stringAttr(a *hcl.Attribute) (string, hcl.Diagnostics) {
	if a == nil {
		return "", nil
	}
	v, diags := a.Expr.Value(nil)
	if diags.HasErrors() {
		return "", diags
	}
	if v.IsNull() || !v.IsKnown() || v.Type() != cty.String {
		return "", hcl.Diagnostics{attrError(a, "want a string")}
	}
	return v.AsString(), nil
}

func digestAttr(a *hcl.Attribute) (string, hcl.Diagnostics) {
	s, diags := stringAttr(a)
	if diags.HasErrors() || a == nil {
		return s, diags
	}
	if !digestRE().MatchString(s) {
		return "", hcl.Diagnostics{attrError(a, fmt.Sprintf("%q is not a digest: want \"sha256:\" and 64 lower-case hex digits", s))}
	}
	return s, nil
}

func attrError(a *hcl.Attribute, detail string) *hcl.Diagnostic {
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  "Invalid " + a.Name,
		Detail:   strings.ToUpper(detail[:1]) + detail[1:] + ".",
		Subject:  a.Expr.Range().Ptr(),
	}
}
