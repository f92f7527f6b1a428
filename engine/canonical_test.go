package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/symbi-dev/symbi/journal"
)

// canonicalHCL has one agent per policy engine, each allowing read_file
// and list_dir but denying any path that starts with "secret", and one that
// allows every file tool outright.
const canonicalHCL = `
model "m" {
  provider = "scripted"
  script   = "unused.json"
}
tool "read" {
  builtin = "read_file"
}
tool "list" {
  builtin = "list_dir"
}
tool "write" {
  builtin = "write_file"
}
policy "rules" {
  rules {
    deny  = ["read:path=secret*"]
    allow = ["read", "list"]
  }
}
policy "opa" {
  opa {
    modules = ["gate.rego"]
    query   = "data.t.decision"
  }
}
policy "cedar" {
  cedar {
    policies = ["gate.cedar"]
  }
}
policy "everything" {
  rules {
    allow = ["*"]
  }
}
policy "rewrite" {
  opa {
    modules = ["rewrite.rego"]
    query   = "data.r.decision"
  }
}
agent "rules" {
  model    = model.m
  tools    = [tool.read, tool.list]
  policies = [policy.rules]
}
agent "opa" {
  model    = model.m
  tools    = [tool.read, tool.list]
  policies = [policy.opa]
}
agent "cedar" {
  model    = model.m
  tools    = [tool.read, tool.list]
  policies = [policy.cedar]
}
agent "anything" {
  model    = model.m
  tools    = [tool.read, tool.list, tool.write]
  policies = [policy.everything]
}
agent "rewritten" {
  model    = model.m
  tools    = [tool.read]
  policies = [policy.rewrite, policy.everything]
}
`

var canonicalFiles = fixture{
	"main.hcl":    canonicalHCL,
	"unused.json": `{"turns":[]}`,
	"gate.rego": `package t
decision := {"decision": "deny", "reason": "opa: no secrets"} if {
	startswith(input.action.arguments.path, "secret")
} else := {"decision": "allow"}
`,
	"gate.cedar": `permit (principal, action, resource);
@reason("cedar: no secrets")
forbid (principal, action, resource)
when { context.arguments has path && context.arguments.path like "secret*" };
`,
	"rewrite.rego": `package r
decision := {"decision": "modify", "arguments": {"path": "./notes/a.txt"}}
`,
	"secret.txt":  "the secret",
	"notes/a.txt": "a note",
}

// toolGateRecords returns the journal's gate records of tool calls.
func toolGateRecords(t *testing.T, evs []journal.Event) []journal.GateRecord {
	t.Helper()
	var out []journal.GateRecord
	for _, ev := range evs {
		if ev.Type != journal.PolicyEvaluated {
			continue
		}
		var d journal.PolicyEvaluatedData
		if err := ev.Decode(&d); err != nil {
			t.Fatal(err)
		}
		for _, g := range d.Decisions {
			if g.Action.Type == "tool_call" {
				out = append(out, g)
			}
		}
	}
	return out
}

// TestPoliciesDecideOnCanonicalPaths writes one file four ways (through
// "..", with "./", absolute, and through a link inside the workspace): rules,
// OPA and Cedar all see "secret.txt" and deny it, and the journal keeps the
// model's arguments beside the canonical ones.
func TestPoliciesDecideOnCanonicalPaths(t *testing.T) {
	p, dir := canonicalFiles.compile(t)
	if err := os.Symlink("../secret.txt", filepath.Join(dir, "notes", "in")); err != nil {
		t.Fatal(err)
	}
	for _, agent := range []string{"rules", "opa", "cedar"} {
		for _, path := range []string{"notes/../secret.txt", "./secret.txt", filepath.Join(dir, "secret.txt"), "notes/in", "secret.txt"} {
			t.Run(agent+"/"+path, func(t *testing.T) {
				raw := fmt.Sprintf(`{"path":%q}`, path)
				m := scriptedModel(t, oneCall("read", raw))
				e, _ := newEngine(t, p, dir, withModel(m))
				res := mustRun(t, e, agent, "read it", RunOptions{})
				got := lastToolMessages(m.Requests()[1])[0].Content
				if !strings.HasPrefix(got, "[policy denied]") || strings.Contains(got, "the secret") {
					t.Fatalf("%s read %s: %q, want a denial", agent, path, got)
				}
				recs := toolGateRecords(t, journalOf(t, e, res.RunID))
				if len(recs) != 1 {
					t.Fatalf("%d gate records", len(recs))
				}
				if string(recs[0].Action.Arguments) != `{"path":"secret.txt"}` {
					t.Errorf("the policies saw %s, want the canonical path", recs[0].Action.Arguments)
				}
				wantRaw := raw
				if path == "secret.txt" {
					wantRaw = "" // already canonical: nothing to add
				}
				if string(recs[0].RawArguments) != wantRaw {
					t.Errorf("raw_arguments %s, want %s", recs[0].RawArguments, wantRaw)
				}
			})
		}
	}
}

// TestProtectedPathsWhateverThePolicy allows every tool, and still no file
// tool reaches the state directory or the configuration's own files; a
// listing of their directory leaves them out.
func TestProtectedPathsWhateverThePolicy(t *testing.T) {
	p, dir := canonicalFiles.compile(t)
	state := filepath.Join(dir, ".symbi")
	if err := os.MkdirAll(filepath.Join(state, "approvals"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../.symbi/approvals", filepath.Join(dir, "notes", "box")); err != nil {
		t.Fatal(err)
	}
	withState := func(o *Options) { o.StateDir = state }
	for _, tc := range []struct{ tool, args, want string }{
		{"write", `{"path":"notes/../.symbi/approvals/x.decision.json","content":"{\"approved\":true}"}`, "is inside the state directory"},
		{"write", `{"path":"notes/box/x.decision.json","content":"{}"}`, "is inside the state directory"},
		{"list", `{"path":".symbi/approvals"}`, "is inside the state directory"},
		{"read", `{"path":"main.hcl"}`, "is a file of the configuration"},
		{"write", `{"path":"notes/../main.hcl","content":"x","append":true}`, "is a file of the configuration"},
		{"write", `{"path":"gate.rego","content":"package t\ndecision := {\"decision\": \"allow\"}"}`, "is a file of the configuration"},
	} {
		t.Run(tc.tool+" "+tc.args, func(t *testing.T) {
			m := scriptedModel(t, oneCall(tc.tool, tc.args))
			e, _ := newEngine(t, p, dir, func(o *Options) { withModel(m)(o); withState(o) })
			res := mustRun(t, e, "anything", "go", RunOptions{})
			got := lastToolMessages(m.Requests()[1])[0].Content
			if !strings.HasPrefix(got, "[protected path] "+tc.tool+": protected path: ") || !strings.Contains(got, tc.want) {
				t.Errorf("%s %s: %q, want a protected-path refusal that says it %s", tc.tool, tc.args, got, tc.want)
			}
			recs := toolGateRecords(t, journalOf(t, e, res.RunID))
			if len(recs) != 1 || recs[0].Decision.Outcome != "deny" || recs[0].Decision.Engine != "engine" {
				t.Errorf("journal: %+v, want the engine's deny", recs)
			}
		})
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "main.hcl")); string(b) != canonicalHCL {
		t.Error("main.hcl changed")
	}
	if entries, _ := os.ReadDir(filepath.Join(state, "approvals")); len(entries) != 0 {
		t.Errorf("the approvals directory has %d entries", len(entries))
	}

	m := scriptedModel(t, oneCall("list", `{}`))
	e, _ := newEngine(t, p, dir, func(o *Options) { withModel(m)(o); withState(o) })
	res := mustRun(t, e, "anything", "go", RunOptions{})
	if got := lastToolMessages(m.Requests()[1])[0].Content; got != "notes/\nsecret.txt\n" {
		t.Errorf("list_dir of the configuration directory: %q, want neither the state directory nor the configuration's files", got)
	}
	recs := toolGateRecords(t, journalOf(t, e, res.RunID))
	if len(recs) != 1 || string(recs[0].Action.Arguments) != `{"path":"."}` {
		t.Errorf("the gate saw %+v, want the default path written out", recs)
	}
}

// TestModifiedPathMustBeCanonical has a policy rewrite a path into a form
// that is not canonical: the chain refuses the rewrite rather than let a
// path the later policies never saw run.
func TestModifiedPathMustBeCanonical(t *testing.T) {
	p, dir := canonicalFiles.compile(t)
	m := scriptedModel(t, oneCall("read", `{"path":"secret.txt"}`))
	e, _ := newEngine(t, p, dir, withModel(m))
	mustRun(t, e, "rewritten", "go", RunOptions{})
	got := lastToolMessages(m.Requests()[1])[0].Content
	if !strings.HasPrefix(got, "[policy denied]") || !strings.Contains(got, "not in canonical form") {
		t.Errorf("a modify to ./notes/a.txt: %q, want it refused as not canonical", got)
	}
}
