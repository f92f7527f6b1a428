package prehydrate

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/symbi-dev/symbi/stdlib"
)

// Ref is one reference found in the input.
type Ref struct {
	Kind  string // url | file | a custom pattern name
	Value string
	pos   int
}

// The patterns compile on first use: every symbi command links this
// package, and few runs pre-hydrate.
var (
	// urlPattern is an http(s) URL up to whitespace or a closing bracket or quote.
	urlPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`https?://[^\s<>"'` + "`" + `()\[\]{}]+`) })
	// pathPattern is a path-like token: one with a slash (./a, ../a, ~/a, /a/b,
	// dir/file) or a bare file name with an extension (notes.md). A bare
	// name needs two characters before the dot so "e.g." and "i.e." are not
	// taken for files.
	pathPattern = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?:^|[\s("'` + "`" + `\[])((?:\.{1,2}/|~/|/)?(?:[\w.\-]+/)+[\w.\-]+|[\w\-]{2,}(?:\.[\w\-]+)*\.[A-Za-z][A-Za-z0-9]{0,7})`)
	})
)

// trailing is punctuation that ends a sentence rather than a reference.
const trailing = ".,;:!?"

// Find lists the references in input that a resolver exists for,
// in the order they appear, without duplicates, at most limit (0: no limit).
// URLs are found first and their text is not searched again for paths.
// Custom patterns take the whole match, or the first capture group when the
// pattern has one.
func Find(input string, resolvers map[string]string, patterns map[string]*regexp.Regexp, limit int) []Ref {
	var refs []Ref
	masked := []byte(input)
	if _, ok := resolvers["url"]; ok {
		for _, m := range urlPattern().FindAllStringIndex(input, -1) {
			v := strings.TrimRight(input[m[0]:m[1]], trailing)
			refs = append(refs, Ref{Kind: "url", Value: v, pos: m[0]})
			for i := m[0]; i < m[1]; i++ {
				masked[i] = ' '
			}
		}
	} else {
		for _, m := range urlPattern().FindAllStringIndex(input, -1) {
			for i := m[0]; i < m[1]; i++ {
				masked[i] = ' '
			}
		}
	}
	if _, ok := resolvers["file"]; ok {
		for _, m := range pathPattern().FindAllSubmatchIndex(masked, -1) {
			v := strings.TrimRight(string(masked[m[2]:m[3]]), trailing)
			if v == "" || strings.Trim(v, "./~") == "" {
				continue
			}
			refs = append(refs, Ref{Kind: "file", Value: v, pos: m[2]})
		}
	}
	names := make([]string, 0, len(patterns))
	for name := range patterns {
		if _, ok := resolvers[name]; ok {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		re := patterns[name]
		for _, m := range re.FindAllStringSubmatchIndex(input, -1) {
			lo, hi := m[0], m[1]
			if len(m) >= 4 && m[2] >= 0 {
				lo, hi = m[2], m[3]
			}
			if hi > lo {
				refs = append(refs, Ref{Kind: name, Value: input[lo:hi], pos: lo})
			}
		}
	}
	sort.SliceStable(refs, func(i, j int) bool { return refs[i].pos < refs[j].pos })
	seen := map[string]bool{}
	out := refs[:0]
	for _, r := range refs {
		k := r.Kind + "\x00" + r.Value
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, r)
		if limit > 0 && len(out) == limit {
			break
		}
	}
	return out
}

// CompilePatterns compiles pre_hydrate patterns. The compiler has checked
// them, so an error here means a plan edited by hand.
func CompilePatterns(patterns map[string]string) (map[string]*regexp.Regexp, error) {
	out := make(map[string]*regexp.Regexp, len(patterns))
	for name, p := range patterns {
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, fmt.Errorf("pre_hydrate pattern %s: %w", name, err)
		}
		out[name] = re
	}
	return out, nil
}

// Arguments builds a resolver call's arguments from its schema:
// the property named for the reference's kind (url, path for files, the
// pattern's name), else reference, query, id or key, else the only required
// property, else the only property; without a schema, url/path/reference.
func Arguments(schema json.RawMessage, ref Ref) json.RawMessage {
	natural := ref.Kind
	switch ref.Kind {
	case "file":
		natural = "path"
	}
	name := natural
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if len(schema) > 0 && json.Unmarshal(schema, &s) == nil && len(s.Properties) > 0 {
		name = ""
		for _, n := range []string{natural, "reference", "ref", "query", "id", "key", "url", "path"} {
			if _, ok := s.Properties[n]; ok {
				name = n
				break
			}
		}
		switch {
		case name != "":
		case len(s.Required) == 1:
			name = s.Required[0]
		case len(s.Properties) == 1:
			for n := range s.Properties {
				name = n
			}
		default:
			name = natural
		}
	} else if ref.Kind != "url" && ref.Kind != "file" {
		name = "reference"
	}
	b, _ := json.Marshal(map[string]string{name: ref.Value})
	return b
}

// Fit cuts text to at most limit estimated tokens, on a rune
// boundary, marking the cut.
func Fit(text string, limit int) string {
	if stdlib.EstimateTokens(text) <= limit {
		return text
	}
	const mark = "\n[… cut to fit max_context_tokens]"
	runes := []rune(text)
	lo, hi := 0, len(runes)
	for lo < hi { // the longest prefix that fits, with the mark
		mid := (lo + hi + 1) / 2
		if stdlib.EstimateTokens(string(runes[:mid])+mark) <= limit {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	if lo == 0 {
		return ""
	}
	return string(runes[:lo]) + mark
}
