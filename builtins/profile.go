package builtins

import "github.com/symbi-dev/symbi/stdlib"

// ApplyProfile filters tool names by a tool_profile: a name is kept when it
// matches an include glob (or include is empty) and no exclude glob. Globs
// are stdlib.MatchGlob (path.Match) patterns: * and ?, and [...] classes. The input order is
// kept, so the result is deterministic. When more than maxTools names remain
// (maxTools > 0), the first maxTools are kept: list the tools you care most
// about first. A malformed pattern matches nothing.
func ApplyProfile(names []string, include, exclude []string, maxTools int) []string {
	size := len(names)
	if maxTools > 0 {
		size = min(size, maxTools)
	}
	out := make([]string, 0, size)
	for _, n := range names {
		if len(include) > 0 && !matchAny(include, n) {
			continue
		}
		if matchAny(exclude, n) {
			continue
		}
		out = append(out, n)
		if maxTools > 0 && len(out) == maxTools {
			break
		}
	}
	return out
}

func matchAny(patterns []string, name string) bool {
	for _, p := range patterns {
		if ok, err := stdlib.MatchGlob(p, name); err == nil && ok {
			return true
		}
	}
	return false
}
