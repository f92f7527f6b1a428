package lang

import (
	"strings"
	"testing"
)

func TestParseTestFile(t *testing.T) {
	src := `config = "agent.hcl"

variables {
  topic = "otters"
}

run "multiplies" {
  input    = "What is 6 * 7?"
  cassette = "cassettes/multiplies.json"

  variables {
    limit = 3
  }
  budget {
    max_tool_calls = 2
  }
  override_tool {
    target = tool.shell
    result = "ok"
  }
  override_tool {
    target = tool.search
    error  = "down"
  }
  assert {
    condition     = run.answer == "42"
    error_message = "the answer is 42"
  }
  assert {
    condition     = run.iterations <= 2
    error_message = "two iterations at most"
  }
}

run "denied" {
  expect_failures = ["policy_denial"]
}
`
	tf, diags := ParseTestFile(Source{Name: "quick.symbitest.hcl", Bytes: []byte(src)})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	if tf.Attrs["config"] == nil || len(tf.Variables) != 1 || len(tf.Runs) != 2 {
		t.Fatalf("decoded %d attrs, %d variables blocks, %d runs", len(tf.Attrs), len(tf.Variables), len(tf.Runs))
	}
	r := tf.Runs[0]
	if r.Name != "multiplies" || len(r.Nested("assert")) != 2 || len(r.Nested("override_tool")) != 2 || r.One("budget") == nil || r.One("variables").Attrs["limit"] == nil {
		t.Errorf("run %q: %d asserts, %d overrides", r.Name, len(r.Nested("assert")), len(r.Nested("override_tool")))
	}
}

func TestParseTestFileErrors(t *testing.T) {
	for _, tc := range []struct{ name, src, want string }{
		{"unknown attribute", "run \"a\" {\n  inptu = \"x\"\n}\n", `2,3-8: Unsupported argument; An argument named "inptu" is not expected here. Did you mean "input"?`},
		{"unknown block", "test \"a\" {}\n", `1,1-5: Unsupported block type`},
		{"bad run name", "run \"A b\" {}\n", `1,5-10: Invalid name`},
		{"two budgets", "run \"a\" {\n  budget {}\n  budget {}\n}\n", `3,3-9: Duplicate budget block; Only one budget block is allowed in a run block; the first is at quick.symbitest.hcl:2,3-9.`},
		{"two variables", "variables {}\nvariables {}\n", `2,1-10: Duplicate variables block; A test file has one variables block; the first is at quick.symbitest.hcl:1,1-10.`},
		{"unknown assert attribute", "run \"a\" {\n  assert {\n    condtion = true\n  }\n}\n", `3,5-13: Unsupported argument`},
		{"syntax", "run \"a\" {\n", `Unclosed configuration block`},
		{"too deep", "run \"a\" {\n  input = " + strings.Repeat("[", 300) + "\n}\n", `2,266-266: Nesting too deep`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, diags := ParseTestFile(Source{Name: "quick.symbitest.hcl", Bytes: []byte(tc.src)})
			if !diags.HasErrors() || !strings.Contains(diags.Error(), tc.want) {
				t.Errorf("diagnostics %q, want one containing %q", diags.Error(), tc.want)
			}
			for _, d := range diags {
				if d.Subject == nil {
					t.Errorf("diagnostic without a range: %s", d.Summary)
				}
			}
		})
	}
}

func TestIsTestFile(t *testing.T) {
	for name, want := range map[string]bool{"a.symbitest.hcl": true, "dir/x.symbitest.hcl": true, "a.hcl": false, "symbitest.hcl": false, "a.symbitest.hcl.bak": false} {
		if IsTestFile(name) != want {
			t.Errorf("IsTestFile(%q) = %t", name, !want)
		}
	}
}

// FuzzParseTestFile: no input makes the test file parser panic or hang,
// and every diagnostic it reports has a range in the file.
func FuzzParseTestFile(f *testing.F) {
	f.Add([]byte("config = \"a.hcl\"\nrun \"a\" {\n  input = \"x\"\n  assert {\n    condition = run.answer == \"42\"\n    error_message = \"no\"\n  }\n}\n"))
	f.Add([]byte("variables {\n  a = [1, 2]\n}\nrun \"b\" {\n  override_tool {\n    target = tool.x\n    command = [\"sh\", \"-c\", \"echo hi\"]\n  }\n  budget {\n    max_tool_calls = 1\n  }\n}\n"))
	f.Add([]byte("run \"x\" { repeat = 3\n pass_rate = 0.5 }"))
	f.Fuzz(func(t *testing.T, src []byte) {
		tf, diags := ParseTestFile(Source{Name: "fuzz.symbitest.hcl", Bytes: src})
		if tf == nil || tf.File == nil {
			t.Fatal("no file returned")
		}
		for _, d := range diags {
			if d.Subject == nil {
				t.Errorf("diagnostic without a range: %s", d.Summary)
			} else if d.Subject.Filename != "fuzz.symbitest.hcl" {
				t.Errorf("diagnostic in another file: %s", d.Subject)
			}
		}
	})
}
