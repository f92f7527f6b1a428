package interp

import "testing"

func TestCheckVersion(t *testing.T) {
	for _, tc := range []struct {
		constraint, version string
		ok                  bool
	}{
		{">= 0.1", "0.1.0-dev", true},
		{">= 0.2", "0.1.0", false},
		{">= 0.1, < 1", "0.9.3", true},
		{">= 0.1, < 1", "1.0.0", false},
		{"~> 0.3", "0.9", true},
		{"~> 0.3", "1.0", false},
		{"~> 0.3.1", "0.3.9", true},
		{"~> 0.3.1", "0.4.0", false},
		{"0.1.0", "0.1", true},
		{"!= 0.1", "0.1.0", false},
	} {
		ok, err := checkVersion(tc.constraint, tc.version)
		if err != nil || ok != tc.ok {
			t.Errorf("checkVersion(%q, %q) = %v, %v; want %v", tc.constraint, tc.version, ok, err, tc.ok)
		}
	}
	for _, bad := range []string{">= x", ">=", "1.2.3.4", ">= -1"} {
		if _, err := checkVersion(bad, "0.1.0"); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
}
