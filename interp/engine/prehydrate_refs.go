package engine

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// prehydrateRef is one reference found in the input.
type prehydrateRef struct {
	Kind  string // url | file | a custom pattern name
	Value string
	pos   int
}

var (
	// phURL is an http(s) URL up to whitespace or a closing bracket or quote.
	phURL = regexp.MustCompile(`https?://[^\s<>"'` + "`" + `()\[\]{}]+`)
	// phPath is a path-like token: one with a slash (./a, ../a, ~/a, /a/b,
	// dir/file) or a bare file name with an extension (notes.md). A bare
	// name needs two characters before the dot so "e.g." and "i.e." are not
	// taken for files.
	phPath = regexp.MustCompile(`(?:^|[\s("'` + "`" + `\[])((?:\.{1,2}/|~/|/)?(?:[\w.\-]+/)+[\w.\-]+|[\w\-]{2,}(?:\.[\w\-]+)*\.[A-Za-z][A-Za-z0-9]{0,7})`)
)

// phTrailing is punctuation that ends a sentence rather than a reference.
const phTrailing = ".,;:!?"

// findReferences lists the references in input that a resolver exists for,
// in the order they appear, without duplicates, at most limit (0: no limit).
// URLs are found first and their text is not searched again for paths.
// Custom patterns take the whole match, or the first capture group when the
// pattern has one.
func findReferences(input string, resolvers map[string]string, patterns map[string]*regexp.Regexp, limit int) []prehydrateRef {
	var refs []prehydrateRef
	masked := []byte(input)
	if _, ok := resolvers["url"]; ok {
		for _, m := range phURL.FindAllStringIndex(input, -1) {
			v := strings.TrimRight(input[m[0]:m[1]], phTrailing)
			refs = append(refs, prehydrateRef{Kind: "url", Value: v, pos: m[0]})
			for i := m[0]; i < m[1]; i++ {
				masked[i] = ' '
			}
		}
	} else {
		for _, m := range phURL.FindAllStringIndex(input, -1) {
			for i := m[0]; i < m[1]; i++ {
				masked[i] = ' '
			}
		}
	}
	if _, ok := resolvers["file"]; ok {
		for _, m := range phPath.FindAllSubmatchIndex(masked, -1) {
			v := strings.TrimRight(string(masked[m[2]:m[3]]), phTrailing)
			if v == "" || strings.Trim(v, "./~") == "" {
				continue
			}
			refs = append(refs, prehydrateRef{Kind: "file", Value: v, pos: m[2]})
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
				refs = append(refs, prehydrateRef{Kind: name, Value: input[lo:hi], pos: lo})
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

// compilePatterns compiles pre_hydrate patterns. The compiler has checked
// them, so an error here means a plan edited by hand.
func compilePatterns(patterns map[string]string) (map[string]*regexp.Regexp, error) {
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
