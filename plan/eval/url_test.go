package eval

import (
	"net/url"
	"strings"
	"testing"

	"github.com/symbi-dev/symbi/plan"
)

func deferredURL(src string) plan.String {
	return plan.String{Deferred: &plan.Expr{Source: src, Range: plan.Range{Filename: "main.hcl", Line: 3, Column: 11}}}
}

func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// hostile holds every character that means something in a URL.
const hostile = "a+b/c=d&e f%25#g?h@i:j;k[l]é\x00"

func TestEvalURLEscapesEachInterpolation(t *testing.T) {
	env := envOf(map[string]string{
		"KEY":  hostile,
		"BASE": "https://api.example.com:8443/v2",
		"HOST": "api.example.com:8443",
		"USER": "ada@example",
		"PASS": "p@ss:w/rd",
		"URL":  "https://whole.example.com/x?y=1+2",
	})
	for _, tc := range []struct {
		src   string
		check func(t *testing.T, u *url.URL, raw string)
	}{
		{`"https://api.example.com/v1/search?key=${env("KEY")}&fixed=1"`, func(t *testing.T, u *url.URL, _ string) {
			if got := u.Query().Get("key"); got != hostile {
				t.Errorf("key = %q, want %q", got, hostile)
			}
			if got := u.Query().Get("fixed"); got != "1" || u.Fragment != "" {
				t.Errorf("the key spilled into the rest of the URL: %+v", u)
			}
		}},
		{`"https://api.example.com/users/${env("KEY")}/info"`, func(t *testing.T, u *url.URL, _ string) {
			segs := strings.Split(u.EscapedPath(), "/")
			if len(segs) != 4 || segs[3] != "info" {
				t.Fatalf("path %q: the value made segments of its own", u.EscapedPath())
			}
			if got, _ := url.PathUnescape(segs[2]); got != hostile {
				t.Errorf("segment = %q, want %q", got, hostile)
			}
		}},
		{`"https://api.example.com/x#${env("KEY")}"`, func(t *testing.T, u *url.URL, _ string) {
			if u.Fragment != hostile {
				t.Errorf("fragment = %q, want %q", u.Fragment, hostile)
			}
		}},
		{`"${env("BASE")}/search?q=${env("KEY")}"`, func(t *testing.T, u *url.URL, _ string) {
			if u.Host != "api.example.com:8443" || u.Path != "/v2/search" || u.Query().Get("q") != hostile {
				t.Errorf("base URL not taken as it is: %+v", u)
			}
		}},
		{`"https://${env("HOST")}/x"`, func(t *testing.T, u *url.URL, _ string) {
			if u.Host != "api.example.com:8443" {
				t.Errorf("host = %q", u.Host)
			}
		}},
		{`"https://${env("USER")}:${env("PASS")}@example.com/"`, func(t *testing.T, u *url.URL, _ string) {
			pass, _ := u.User.Password()
			if u.User.Username() != "ada@example" || pass != "p@ss:w/rd" || u.Host != "example.com" {
				t.Errorf("user information %v, host %q", u.User, u.Host)
			}
		}},
		{`env("URL")`, func(t *testing.T, _ *url.URL, raw string) {
			if raw != "https://whole.example.com/x?y=1+2" {
				t.Errorf("a whole URL from the environment is %q", raw)
			}
		}},
		{`"${env("URL")}"`, func(t *testing.T, _ *url.URL, raw string) {
			if raw != "https://whole.example.com/x?y=1+2" {
				t.Errorf("a wrapped whole URL is %q", raw)
			}
		}},
		{`"https://example.com/?q=${lower(env("USER"))}&n=${1+1}"`, func(t *testing.T, u *url.URL, _ string) {
			if u.Query().Get("q") != "ada@example" || u.Query().Get("n") != "2" {
				t.Errorf("query %q", u.RawQuery)
			}
		}},
	} {
		t.Run(tc.src, func(t *testing.T) {
			raw, err := URL(deferredURL(tc.src), env)
			if err != nil {
				t.Fatal(err)
			}
			u, err := url.Parse(raw)
			if err != nil {
				t.Fatalf("%q: %v", raw, err)
			}
			tc.check(t, u, raw)
		})
	}
}

func TestEvalURLRefusesWhatIsNotAHost(t *testing.T) {
	_, err := URL(deferredURL(`"https://${env("HOST")}/x"`), envOf(map[string]string{"HOST": "evil.example/steal?"}))
	if err == nil || !strings.Contains(err.Error(), "main.hcl:3:11") || !strings.Contains(err.Error(), "not a host name") {
		t.Errorf("error %v, want the place and the reason", err)
	}
	if strings.Contains(err.Error(), "evil") {
		t.Errorf("the error quotes the value: %v", err)
	}
}

func TestEvalURLLiteralsAndErrors(t *testing.T) {
	if got, err := URL(plan.Lit("https://example.com/?a=1+2"), nil); err != nil || got != "https://example.com/?a=1+2" {
		t.Errorf("a literal URL: %q %v", got, err)
	}
	if _, err := URL(deferredURL(`"https://example.com/?k=${env("UNSET")}"`), envOf(nil)); err == nil {
		t.Error("an unset variable gave no error")
	}
	if _, err := URL(deferredURL(`"https://example.com/?k=${`), envOf(nil)); err == nil {
		t.Error("a broken expression gave no error")
	}
}

// FuzzEvalURL (of URL): whatever an environment value holds, it comes back from
// the query, a path segment and the fragment exactly, and moves no other
// part of the URL.
func FuzzEvalURL(f *testing.F) {
	for _, s := range []string{"", "plain", hostile, "%", "%2B", "+", "a b", "&x=1", "#", "?", "/../", "\xff"} {
		f.Add(s)
	}
	src := deferredURL(`"https://example.com/p/${env("V")}/end?k=${env("V")}&fixed=1#${env("V")}"`)
	f.Fuzz(func(t *testing.T, v string) {
		raw, err := URL(src, envOf(map[string]string{"V": v}))
		if err != nil {
			t.Fatal(err)
		}
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatalf("%q: %v", raw, err)
		}
		q, err := url.ParseQuery(u.RawQuery)
		if err != nil {
			t.Fatalf("query %q: %v", u.RawQuery, err)
		}
		if len(q) != 2 || q.Get("k") != v || q.Get("fixed") != "1" {
			t.Fatalf("query %q: want k=%q and fixed=1 only", u.RawQuery, v)
		}
		segs := strings.Split(u.EscapedPath(), "/")
		if len(segs) != 4 || segs[1] != "p" || segs[3] != "end" {
			t.Fatalf("path %q moved", u.EscapedPath())
		}
		if got, _ := url.PathUnescape(segs[2]); got != v {
			t.Fatalf("segment %q, want %q", got, v)
		}
		if u.Host != "example.com" || u.Fragment != v {
			t.Fatalf("host %q, fragment %q", u.Host, u.Fragment)
		}
	})
}
