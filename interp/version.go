package interp

import (
	"fmt"
	"strconv"
	"strings"
)

// checkVersion reports whether version satisfies a constraint such as
// ">= 0.1, < 2" (operators =, !=, >, >=, <, <=, ~>; "~> 0.3" means >= 0.3 and
// < 1.0, "~> 0.3.1" means >= 0.3.1 and < 0.4). A pre-release suffix of the
// running version ("0.1.0-dev") is ignored.
func checkVersion(constraint, version string) (bool, error) {
	have, err := parseVersion(strings.SplitN(version, "-", 2)[0])
	if err != nil {
		return false, fmt.Errorf("symbi version %q: %w", version, err)
	}
	ok := true
	for _, clause := range strings.Split(constraint, ",") {
		clause = strings.TrimSpace(clause)
		op := "="
		for _, o := range []string{">=", "<=", "!=", "~>", ">", "<", "="} {
			if strings.HasPrefix(clause, o) {
				op, clause = o, strings.TrimSpace(clause[len(o):])
				break
			}
		}
		want, err := parseVersion(clause)
		if err != nil {
			return false, err
		}
		c := compareVersions(have, want)
		switch op {
		case "=":
			ok = ok && c == 0
		case "!=":
			ok = ok && c != 0
		case ">":
			ok = ok && c > 0
		case ">=":
			ok = ok && c >= 0
		case "<":
			ok = ok && c < 0
		case "<=":
			ok = ok && c <= 0
		case "~>":
			upper := append([]int{}, want...)
			n := len(upper) - 1
			if n == 0 {
				n = 1
				upper = append(upper, 0)
			}
			upper[n-1]++
			for i := n; i < len(upper); i++ {
				upper[i] = 0
			}
			ok = ok && c >= 0 && compareVersions(have, upper[:n]) < 0
		}
	}
	return ok, nil
}

func parseVersion(s string) ([]int, error) {
	if s == "" {
		return nil, fmt.Errorf("empty version in constraint")
	}
	parts := strings.Split(s, ".")
	if len(parts) > 3 {
		return nil, fmt.Errorf("version %q has more than three parts", s)
	}
	out := make([]int, len(parts))
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("version %q: %q is not a number", s, p)
		}
		out[i] = n
	}
	return out, nil
}

func compareVersions(a, b []int) int {
	for i := 0; i < max(len(a), len(b)); i++ {
		var x, y int
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	return 0
}
