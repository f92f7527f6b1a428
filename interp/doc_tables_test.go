package interp

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/rogpeppe/go-internal/txtar"
	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/symbi-dev/symbi/lang"
	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/stdlib"
)

// docRow is one row of an attribute table of docs/language.md: one
// attribute of the block at path (nested blocks' attributes are written
// block.name in their top-level block's table).
type docRow struct {
	path []string // "agent", "loop"
	attr string
	typ  string
	def  string // the default cell as written
	line int
}

// key is the attribute's full name: "agent.loop.mode".
func (r docRow) key() string { return strings.Join(r.path, ".") + "." + r.attr }

func (r docRow) String() string { return fmt.Sprintf("docs/language.md:%d: %s", r.line, r.key()) }

var (
	codeSpanRE = regexp.MustCompile("`([^`]*)`")
	headingRE  = regexp.MustCompile(`^(##|###) (\S+)\s*$`)
)

// cells splits a table row into its cells, without the outer pipes. A pipe
// inside a code span is written \| and stays in its cell.
func cells(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimSuffix(strings.TrimPrefix(line, "|"), "|")
	parts := strings.Split(strings.ReplaceAll(line, `\|`, "\x00"), "|")
	for i, p := range parts {
		parts[i] = strings.TrimSpace(strings.ReplaceAll(p, "\x00", "|"))
	}
	return parts
}

// parseAttrTables reads every table of doc whose header is
// "| attribute | type | default | meaning |". A table belongs to the block
// of the "## TYPE" heading above it, or to its nested block "### NAME" when
// that heading names one.
func parseAttrTables(t *testing.T, doc []byte, schemas map[string]*lang.Schema) []docRow {
	t.Helper()
	var rows []docRow
	var block []string
	lines := strings.Split(string(doc), "\n")
	for i := 0; i < len(lines); i++ {
		if m := headingRE.FindStringSubmatch(lines[i]); m != nil {
			switch {
			case m[1] == "##":
				block = nil
				if schemas[m[2]] != nil {
					block = []string{m[2]}
				}
			case len(block) > 0 && schemas[block[0]].Blocks[m[2]] != nil:
				block = []string{block[0], m[2]}
			case len(block) > 0:
				block = block[:1]
			}
			continue
		}
		if !strings.HasPrefix(lines[i], "| attribute |") {
			continue
		}
		if h := cells(lines[i]); !reflect.DeepEqual(h, []string{"attribute", "type", "default", "meaning"}) {
			t.Errorf("docs/language.md:%d: an attribute table's columns are attribute, type, default, meaning; not %q", i+1, h)
			continue
		}
		if len(block) == 0 {
			t.Errorf("docs/language.md:%d: an attribute table outside a block's section", i+1)
			continue
		}
		for i += 2; i < len(lines) && strings.HasPrefix(lines[i], "|"); i++ {
			c := cells(lines[i])
			if len(c) != 4 {
				t.Errorf("docs/language.md:%d: want 4 cells, got %d", i+1, len(c))
				continue
			}
			names := codeSpanRE.FindAllStringSubmatch(c[0], -1)
			if len(names) == 0 {
				t.Errorf("docs/language.md:%d: no attribute name in %q", i+1, c[0])
			}
			for _, n := range names {
				parts := strings.Split(n[1], ".")
				path := append(append([]string(nil), block...), parts[:len(parts)-1]...)
				rows = append(rows, docRow{path: path, attr: parts[len(parts)-1], typ: strings.Trim(c[1], "`"), def: c[2], line: i + 1})
			}
		}
		i--
	}
	return rows
}

// schemaAttrs lists the attributes of every block type lang decodes, by
// path; blocks with open bodies (locals, vary) have none to document.
func schemaAttrs(prefix []string, schemas map[string]*lang.Schema, out map[string][]string) {
	for name, s := range schemas {
		path := append(append([]string(nil), prefix...), name)
		if !s.Open && len(s.Attrs) > 0 {
			out[strings.Join(path, ".")] = s.Attrs
		}
		schemaAttrs(path, s.Blocks, out)
	}
}

// TestLanguageDocTables is the meta-test of docs/language.md's attribute
// tables, as TestDocsMatchRegistry is of docs/functions.md: every attribute
// of lang's schemas has exactly one row and every row is an attribute; the
// type is the one the compiler reads it as (a value of another type is
// refused with that type's message); "required" is exactly what the
// compiler reports missing; and a default is what the compiler puts in the
// plan when the attribute is left out, in the configurations of
// testdata/doc_tables.txtar.
func TestLanguageDocTables(t *testing.T) {
	doc, err := os.ReadFile("../docs/language.md")
	if err != nil {
		t.Fatal(err)
	}
	schemas := lang.TopLevel()
	rows := parseAttrTables(t, doc, schemas)

	want := map[string][]string{}
	schemaAttrs(nil, schemas, want)
	documented := map[string]docRow{}
	for _, r := range rows {
		if prev, dup := documented[r.key()]; dup {
			t.Errorf("%s: documented twice (first at line %d)", r, prev.line)
		}
		documented[r.key()] = r
		if !slices.Contains(want[strings.Join(r.path, ".")], r.attr) {
			t.Errorf("%s: no such attribute in lang's schema", r)
		}
	}
	for path, attrs := range want {
		for _, a := range attrs {
			if _, ok := documented[path+"."+a]; !ok {
				t.Errorf("%s.%s: lang's schema has it, docs/language.md has no row for it", path, a)
			}
		}
	}

	dir, configs := docTablesConfigs(t)
	for typ := range schemas {
		if configs[typ] == nil && !schemas[typ].Open {
			t.Errorf("testdata/doc_tables.txtar has no %s.hcl", typ)
		}
	}
	compile := func(t *testing.T, src []byte) (*plan.Plan, hcl.Diagnostics) {
		t.Helper()
		p := filepath.Join(dir, "probe.hcl")
		writeFile(t, p, src)
		cfg, diags := Compile(p, Options{Validate: true, LookupEnv: noEnv, NoScope: true})
		if cfg == nil {
			t.Fatalf("nothing compiled:\n%s", listDiags(diags))
		}
		return cfg.Plan, diags
	}
	plans := map[string]map[string]any{}
	for typ, src := range configs {
		p, diags := compile(t, src)
		if diags.HasErrors() {
			t.Fatalf("testdata/doc_tables.txtar %s.hcl does not compile:\n%s", typ, listDiags(diags))
		}
		js, err := plan.Encode(p)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(js, &m); err != nil {
			t.Fatal(err)
		}
		plans[typ] = m
	}

	for _, r := range rows {
		src := configs[r.path[0]]
		if src == nil {
			continue
		}
		t.Run(r.key(), func(t *testing.T) {
			blocks := onlyFor(r, blocksAt(t, src, r.path))
			if len(blocks) == 0 {
				t.Fatalf("%s: testdata/doc_tables.txtar %s.hcl has no %s block", r, r.path[0], strings.Join(r.path, "."))
			}
			// The first block that sets the attribute, and the first
			// that leaves it out.
			var with, without *located
			for i := range blocks {
				if blocks[i].block.Body().GetAttribute(r.attr) != nil {
					with = cmp.Or(with, &blocks[i])
				} else {
					without = cmp.Or(without, &blocks[i])
				}
			}
			checkType(t, r, cmp.Or(with, &blocks[0]), compile)
			required := strings.HasPrefix(r.def, "required")
			if with != nil {
				// Leaving out what the configuration sets is an error
				// exactly when the table says required.
				with.block.Body().RemoveAttribute(r.attr)
				_, diags := compile(t, with.file.Bytes())
				switch missing := reportsMissing(diags, r.attr); {
				case missing && !required:
					t.Errorf("%s: the table says %q, but leaving it out is a missing required argument", r, r.def)
				case !missing && required:
					t.Errorf("%s: the table says required, but leaving it out is no missing required argument", r)
				}
			} else if required {
				t.Errorf("%s: required, but testdata/doc_tables.txtar %s.hcl does not set it", r, r.path[0])
			}
			if required {
				return
			}
			if without == nil {
				t.Fatalf("%s: every %s block of testdata/doc_tables.txtar sets it, so its default cannot be checked", r, strings.Join(r.path, "."))
			}
			obj := planEntry(t, plans[r.path[0]], without, r.path)
			got, present := planValue(obj, r)
			checkDefault(t, r, obj, got, present, without.top.Labels())
		})
	}
}

// onlyForRE finds a default cell's "(anthropic only)": the attribute
// belongs to the blocks whose provider is that one, and only they are
// checked.
var onlyForRE = regexp.MustCompile(`\((\w+) only\)`)

func onlyFor(r docRow, blocks []located) []located {
	m := onlyForRE.FindStringSubmatch(r.def)
	if m == nil {
		return blocks
	}
	var out []located
	for _, b := range blocks {
		if a := b.top.Body().GetAttribute("provider"); a != nil && strings.Trim(strings.TrimSpace(string(a.Expr().BuildTokens(nil).Bytes())), `"`) == m[1] {
			out = append(out, b)
		}
	}
	return out
}

// docTablesConfigs writes testdata/doc_tables.txtar into a directory and
// returns it, with each TYPE.hcl's text by TYPE.
func docTablesConfigs(t *testing.T) (string, map[string][]byte) {
	t.Helper()
	ar, err := txtar.ParseFile("testdata/doc_tables.txtar")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	configs := map[string][]byte{}
	for _, f := range ar.Files {
		writeFile(t, filepath.Join(dir, f.Name), f.Data)
		if typ, ok := strings.CutSuffix(f.Name, ".hcl"); ok {
			configs[typ] = f.Data
		}
	}
	return dir, configs
}

// located is one block at a path of a configuration: the top-level block
// it is in, and its place among its siblings, to find it in the plan.
type located struct {
	file  *hclwrite.File
	top   *hclwrite.Block
	block *hclwrite.Block
	index []int // per nested level: the place among the parent's blocks (recovery) or among those of its type
	pos   int   // the place in blocksAt's answer
}

// blocksAt parses src afresh (so that each caller may edit what it gets)
// and returns every block at path, in the order written.
func blocksAt(t *testing.T, src []byte, path []string) []located {
	t.Helper()
	f, diags := hclwrite.ParseConfig(src, "probe.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	var out []located
	var walk func(top, b *hclwrite.Block, depth int, index []int)
	walk = func(top, b *hclwrite.Block, depth int, index []int) {
		if depth == len(path) {
			out = append(out, located{file: f, top: top, block: b, index: index, pos: len(out)})
			return
		}
		same := 0
		for all, nb := range b.Body().Blocks() {
			if nb.Type() != path[depth] {
				continue
			}
			i := same
			if path[0] == "recovery" {
				i = all // strategies are one list in the order written
			}
			walk(top, nb, depth+1, append(append([]int(nil), index...), i))
			same++
		}
	}
	for _, b := range f.Body().Blocks() {
		if b.Type() == path[0] {
			walk(b, b, 1, nil)
		}
	}
	return out
}

// planLists are the plan's lists of each top-level block type.
var planLists = map[string]string{
	"model": "models", "router": "routers", "tool": "tools", "mcp_server": "mcp_servers",
	"tool_profile": "tool_profiles", "policy": "policies", "policy_test": "policy_tests", "budget": "budgets",
	"recovery": "recoveries", "knowledge": "knowledge", "agent": "agents", "best_of_n": "best_of_n",
}

// planEntry finds the plan's JSON object for a block located at path.
func planEntry(t *testing.T, p map[string]any, l *located, path []string) map[string]any {
	t.Helper()
	typ := l.top.Type()
	var obj map[string]any
	switch typ {
	case "symbi":
		obj, _ = p["settings"].(map[string]any)
	case "variable":
		obj = findEntry(p["variables"], "name", l.top.Labels()[0])
	default:
		obj = findEntry(p[planLists[typ]], "address", typ+"."+l.top.Labels()[0])
	}
	for depth, i := range l.index {
		seg := path[depth+1]
		switch {
		case obj == nil:
		case typ == "tool" && depth == 0 && (seg == "command" || seg == "http" || seg == "mcp"):
			obj = child(child(obj, "executor"), seg)
		case typ == "recovery" && depth == 0:
			obj = child(elem(obj["strategies"], i), seg)
		case seg == "rubric":
			// The criteria are the reflect object's "rubric" list.
		case seg == "criterion":
			obj = elem(obj["rubric"], i)
		default:
			obj = child(obj, seg)
		}
	}
	if obj == nil {
		t.Fatalf("the plan has no %s for %s %q", strings.Join(path, "."), typ, l.top.Labels())
	}
	return obj
}

func findEntry(list any, key, value string) map[string]any {
	items, _ := list.([]any)
	for _, it := range items {
		if m, ok := it.(map[string]any); ok && m[key] == value {
			return m
		}
	}
	return nil
}

func child(obj map[string]any, key string) map[string]any {
	if obj == nil {
		return nil
	}
	m, _ := obj[key].(map[string]any)
	return m
}

func elem(list any, i int) map[string]any {
	items, _ := list.([]any)
	if i >= len(items) {
		return nil
	}
	m, _ := items[i].(map[string]any)
	return m
}

// planValue is the plan's value of r's attribute in obj. The plan names a
// few attributes differently.
func planValue(obj map[string]any, r docRow) (any, bool) {
	switch r.key() {
	case "variable.default":
		v, ok := obj["value"]
		return v, ok
	case "tool.builtin":
		v, ok := child(obj, "executor")["builtin"]
		return v, ok
	case "tool.circuit_breaker.enabled", "mcp_server.circuit_breaker.enabled":
		// The plan writes the exception: "disabled": true.
		disabled, _ := obj["disabled"].(bool)
		return !disabled, true
	}
	v, ok := obj[r.attr]
	return v, ok
}

// typeProbes are, for each type the tables name, values to set the
// attribute to and what the compiler must say then (the configurations
// compile without errors, so every error is about the probe): a value of
// another type is refused in words that name the type; a string is not read
// as a duration; an "any" attribute takes an object of lists.
var typeProbes = map[string][]struct {
	value   string
	want    string // a regular expression the errors match
	wantNot string // a regular expression no error matches
}{
	"string":          {{`["x"]`, `must be (a )?string`, ``}, {`"5"`, ``, `Invalid duration`}},
	"number":          {{`"x"`, `must be number`, ``}},
	"bool":            {{`"x"`, `must be bool`, ``}},
	"duration":        {{`"5"`, `Invalid duration`, ``}},
	"list(string)":    {{`"x"`, `must be list of string`, ``}},
	"map(string)":     {{`"x"`, `must be map of string`, ``}},
	"reference":       {{`"x"`, `must be a reference`, ``}},
	"list(reference)": {{`"x"`, `must be a list of references`, ``}},
	"map(reference)":  {{`"x"`, `must be an object of references`, ``}},
	"object":          {{`"x"`, `must be an object|not a valid JSON Schema`, ``}},
	"expression":      {{`var.x`, `Invalid reference in a deferred expression`, ``}},
	"type":            {{`"x"`, `Invalid type specification`, ``}},
	"any":             {{`{ a = ["x"] }`, ``, `.`}},
}

// checkType sets r's attribute in l's block to values of other types and
// checks what the compiler says.
func checkType(t *testing.T, r docRow, l *located, compile func(*testing.T, []byte) (*plan.Plan, hcl.Diagnostics)) {
	t.Helper()
	probes, ok := typeProbes[r.typ]
	if !ok {
		t.Errorf("%s: unknown type %q (the tables use %s)", r, r.typ, strings.Join(keys(typeProbes), ", "))
		return
	}
	for _, p := range probes {
		// Each probe edits its own copy of the configuration.
		b := blocksAt(t, l.file.Bytes(), r.path)[l.pos]
		b.block.Body().SetAttributeRaw(r.attr, hclwrite.Tokens{{Type: hclsyntax.TokenIdent, Bytes: []byte(p.value)}})
		_, diags := compile(t, b.file.Bytes())
		var errs []string
		for _, d := range diags {
			if d.Severity == hcl.DiagError {
				errs = append(errs, d.Summary+": "+d.Detail)
			}
		}
		text := strings.Join(errs, "\n")
		if p.want != "" && !regexp.MustCompile(p.want).MatchString(text) {
			t.Errorf("%s: type %s, but %s = %s is not refused as one (want /%s/):\n%s", r, r.typ, r.attr, p.value, p.want, text)
		}
		if p.wantNot != "" && regexp.MustCompile(p.wantNot).MatchString(text) {
			t.Errorf("%s: type %s, but the compiler says of %s = %s:\n%s", r, r.typ, r.attr, p.value, text)
		}
	}
}

func reportsMissing(diags hcl.Diagnostics, attr string) bool {
	for _, d := range diags {
		if d.Summary == "Missing required argument" && strings.Contains(d.Detail, fmt.Sprintf("%q", attr)) {
			return true
		}
	}
	return false
}

// checkDefault compares the plan's value with r's default cell: "none" (the
// plan leaves it out, or holds an empty value), "same as `attr`" (the
// plan's value of that attribute), or a literal in a code span, in HCL
// syntax, in which <name> is the top-level block's name and <state_dir>
// the default state directory.
func checkDefault(t *testing.T, r docRow, obj map[string]any, got any, present bool, labels []string) {
	t.Helper()
	switch {
	case strings.HasPrefix(r.def, "none"):
		if present && !isZero(got) {
			t.Errorf("%s: the default is none, but the plan holds %v", r, got)
		}
		return
	case strings.HasPrefix(r.def, "same as `"):
		other := codeSpanRE.FindStringSubmatch(r.def)[1]
		if !reflect.DeepEqual(got, obj[other]) {
			t.Errorf("%s: the default is %s's value, %v, but the plan holds %v", r, other, obj[other], got)
		}
		return
	case !strings.HasPrefix(r.def, "`"):
		t.Errorf("%s: a default cell starts with required, none, same as `ATTR`, or the value in a code span; not %q", r, r.def)
		return
	}
	lit := codeSpanRE.FindStringSubmatch(r.def)[1]
	name := ""
	if len(labels) > 0 {
		name = labels[0]
	}
	lit = strings.NewReplacer("<name>", name, "<state_dir>", plan.DefaultStateDir).Replace(lit)
	if r.typ == "type" {
		if got != lit {
			t.Errorf("%s: the default is %s, but the plan holds %v", r, lit, got)
		}
		return
	}
	expr, diags := hclsyntax.ParseExpression([]byte(lit), "docs/language.md", hcl.InitialPos)
	if diags.HasErrors() {
		t.Errorf("%s: the default %s is not an HCL literal: %s", r, lit, diags.Error())
		return
	}
	v, diags := expr.Value(nil)
	if diags.HasErrors() {
		t.Errorf("%s: the default %s is not an HCL literal: %s", r, lit, diags.Error())
		return
	}
	if r.typ == "duration" {
		want, err := stdlib.ParseDuration(v.AsString())
		if err != nil {
			t.Errorf("%s: the default %s: %v", r, lit, err)
			return
		}
		s, _ := got.(string)
		if d, err := time.ParseDuration(s); err != nil || d != want {
			t.Errorf("%s: the default is %s, but the plan holds %v", r, lit, got)
		}
		return
	}
	js, err := ctyjson.Marshal(v, v.Type())
	if err != nil {
		t.Fatal(err)
	}
	var want any
	if err := json.Unmarshal(js, &want); err != nil {
		t.Fatal(err)
	}
	if !present && isZero(want) {
		return // left out of the plan's JSON as empty
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s: the default is %s, but the plan holds %v", r, lit, got)
	}
}

func isZero(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case string:
		return v == ""
	case bool:
		return !v
	case float64:
		return v == 0
	case []any:
		return len(v) == 0
	case map[string]any:
		return len(v) == 0
	}
	return false
}

// TestLanguageDocProfiles holds the table of loop profiles in
// docs/language.md to the compiler: the profiles are the ones it accepts,
// and an agent with each gets the mode and the other settings the row
// gives, and the loop table's defaults for the rest.
func TestLanguageDocProfiles(t *testing.T) {
	doc, err := os.ReadFile("../docs/language.md")
	if err != nil {
		t.Fatal(err)
	}
	defaults := map[string]docRow{}
	for _, r := range parseAttrTables(t, doc, lang.TopLevel()) {
		if strings.Join(r.path, ".") == "agent.loop" && strings.HasPrefix(r.def, "`") {
			defaults[r.attr] = r
		}
	}
	type row struct {
		profile, mode string
		set           map[string]string
		line          int
	}
	var rows []row
	lines := strings.Split(string(doc), "\n")
	for i, l := range lines {
		if !reflect.DeepEqual(cells(l), []string{"profile", "mode", "other defaults"}) {
			continue
		}
		for j := i + 2; j < len(lines) && strings.HasPrefix(lines[j], "|"); j++ {
			c := cells(lines[j])
			if len(c) != 3 || !codeSpanRE.MatchString(c[0]) || !codeSpanRE.MatchString(c[1]) {
				t.Fatalf("docs/language.md:%d: want | `profile` | `mode` | `attr = value`, … |", j+1)
			}
			name, mode := codeSpanRE.FindStringSubmatch(c[0]), codeSpanRE.FindStringSubmatch(c[1])
			r := row{profile: name[1], mode: mode[1], set: map[string]string{}, line: j + 1}
			for _, m := range codeSpanRE.FindAllStringSubmatch(c[2], -1) {
				k, v, ok := strings.Cut(m[1], " = ")
				if !ok {
					t.Fatalf("docs/language.md:%d: %q is not attr = value", j+1, m[1])
				}
				r.set[k] = v
			}
			rows = append(rows, r)
		}
	}
	var names []string
	for _, r := range rows {
		names = append(names, r.profile)
	}
	slices.Sort(names)
	if want := slices.Sorted(slices.Values(profiles)); !slices.Equal(names, want) {
		t.Fatalf("docs/language.md's profiles are %q; the compiler's are %q", names, want)
	}

	dir, configs := docTablesConfigs(t)
	src := configs["agent"]
	for _, r := range rows {
		t.Run(r.profile, func(t *testing.T) {
			loops := blocksAt(t, src, []string{"agent", "loop"})
			l := &loops[0]
			l.block.Body().SetAttributeValue("profile", cty.StringVal(r.profile))
			p := filepath.Join(dir, "probe.hcl")
			writeFile(t, p, l.file.Bytes())
			cfg, diags := Compile(p, Options{Validate: true, LookupEnv: noEnv, NoScope: true})
			if diags.HasErrors() {
				t.Fatalf("docs/language.md:%d: profile %s:\n%s", r.line, r.profile, listDiags(diags))
			}
			js, err := json.Marshal(cfg.Plan.Agent("agent." + l.top.Labels()[0]).Loop)
			if err != nil {
				t.Fatal(err)
			}
			var loop map[string]any
			if err := json.Unmarshal(js, &loop); err != nil {
				t.Fatal(err)
			}
			if loop["mode"] != r.mode {
				t.Errorf("docs/language.md:%d: profile %s selects mode %s, the table says %s", r.line, r.profile, loop["mode"], r.mode)
			}
			for attr, d := range defaults {
				if attr == "mode" || attr == "profile" {
					continue
				}
				if v, ok := r.set[attr]; ok {
					d.def = "`" + v + "`"
				}
				got, present := loop[attr]
				d.line = r.line
				checkDefault(t, d, loop, got, present, nil)
			}
			for attr := range r.set {
				if _, ok := defaults[attr]; !ok {
					t.Errorf("docs/language.md:%d: %s is not a loop attribute with a default", r.line, attr)
				}
			}
		})
	}
}
