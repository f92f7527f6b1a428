package policy

import (
	"encoding/json"

	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/seal"
)

// Version is the digest of what a policy decides with: its kind, and its
// rules, or its files (each by path and sha256) and query. Every decision
// records it (Decision.Version), so a journal says which version of a
// policy decided, and a policy whose rules or files change gets another:
// "sha256:" and 64 hex digits. Its address and mode are not part of it.
func Version(p plan.Policy) string {
	type file struct {
		Path   string `json:"path"`
		SHA256 string `json:"sha256"`
	}
	what := struct {
		Kind  string            `json:"kind"`
		Rules *plan.RulesPolicy `json:"rules,omitempty"`
		Files []file            `json:"files,omitempty"`
		Query string            `json:"query,omitempty"`
	}{Kind: p.Kind, Rules: p.Rules}
	add := func(refs ...*plan.FileRef) {
		for _, r := range refs {
			if r != nil {
				what.Files = append(what.Files, file{r.Path, r.SHA256})
			}
		}
	}
	if o := p.OPA; o != nil {
		for i := range o.Modules {
			add(&o.Modules[i])
		}
		add(o.Data)
		what.Query = o.Query
	}
	if c := p.Cedar; c != nil {
		for i := range c.Policies {
			add(&c.Policies[i])
		}
		add(c.Entities, c.Schema)
	}
	b, err := json.Marshal(what)
	if err != nil {
		panic("policy: encoding a version: " + err.Error()) // strings and slices of them always encode
	}
	return seal.Digest(b)
}
