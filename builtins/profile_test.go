package builtins

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestApplyProfile(t *testing.T) {
	names := []string{"read_file", "search_web", "calculator", "read_secret_delete", "write_file", "search_v2", "fs__read_text_file"}
	cases := []struct {
		name             string
		include, exclude []string
		max              int
		want             []string
	}{
		{"no filters keep all in order", nil, nil, 0, names},
		{"include globs", []string{"read_*", "calculator"}, nil, 0, []string{"read_file", "calculator", "read_secret_delete"}},
		{"exclude wins", []string{"read_*", "search_*"}, []string{"*_delete"}, 0, []string{"read_file", "search_web", "search_v2"}},
		{"question mark is one character", []string{"search_v?"}, nil, 0, []string{"search_v2"}},
		{"max_tools keeps the first", nil, []string{"write_*"}, 3, []string{"read_file", "search_web", "calculator"}},
		{"server-prefixed names match too", []string{"fs__*"}, nil, 0, []string{"fs__read_text_file"}},
		{"malformed pattern matches nothing", []string{"[", "calculator"}, nil, 0, []string{"calculator"}},
		{"nothing matches", []string{"nope*"}, nil, 5, []string{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := ApplyProfile(names, c.include, c.exclude, c.max)
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("ApplyProfile (-want +got):\n%s", diff)
			}
		})
	}
}
