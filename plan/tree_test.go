package plan

import (
	"bytes"
	"strings"
	"testing"
)

func TestWriteTree(t *testing.T) {
	ref := NewFileRef("policies/a.rego", []byte("package a\n"))
	p := &Plan{
		FormatVersion: FormatVersion,
		SourceHash:    "abc",
		Settings:      Settings{StateDir: ".symbi", JournalSync: "background"},
		Models: []Model{{
			Address: "model.fast", Provider: "openai", Name: "gpt",
			BaseURL: String{Deferred: &Expr{Source: `env("URL")`, Range: Range{"main.hcl", 3, 14}}},
			Range:   Range{"main.hcl", 1, 1},
		}},
		Policies: []Policy{{Address: "policy.rego", Kind: "opa", OPA: &OPAPolicy{Modules: []FileRef{ref}, Query: "data.a.allow"}, Range: Range{"main.hcl", 9, 1}}},
		Files:    []FileRef{ref},
	}
	var a, b bytes.Buffer
	if err := WriteTree(&a, p); err != nil {
		t.Fatal(err)
	}
	if err := WriteTree(&b, p); err != nil {
		t.Fatal(err)
	}
	if a.String() != b.String() {
		t.Fatal("tree is not deterministic")
	}
	out := a.String()
	for _, want := range []string{
		"model.fast {  # main.hcl:1:1\n",
		`  base_url = env("URL")  # deferred, main.hcl:3:14` + "\n",
		`  name = "gpt"` + "\n",
		`    modules = "policies/a.rego"  # sha256:` + ref.SHA256[:12] + "\n",
		"  policies/a.rego sha256:" + ref.SHA256[:12] + "\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("tree lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "package a") {
		t.Error("the tree shows file text; it should show path and hash")
	}
}
