package planexec

import "testing"

// A plan is model output: parsing and validating one must never panic or
// hang, and a plan that validates must have unique ids and known
// dependencies.
func FuzzParseValidate(f *testing.F) {
	for _, s := range []string{
		`{"steps":[{"id":"a","task":"A"},{"id":"b","task":"B","depends_on":["a"]}]}`,
		`{"steps":[{"id":"a","task":"A","depends_on":["a"]}]}`,
		`{"steps":[{"id":"a","task":"A","depends_on":["b"]},{"id":"b","task":"B","depends_on":["a"]}]}`,
		`{"steps":[]}`, `{"steps":null}`, `prose {"steps":[{"id":"x","description":"d"}]} more`, "{",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		steps, err := Parse(s)
		if err != nil {
			return
		}
		if Validate(steps, map[string]bool{"done": true}, 8) != nil {
			return
		}
		ids := map[string]bool{}
		for _, st := range steps {
			if ids[st.ID] {
				t.Fatalf("duplicate id %q validated", st.ID)
			}
			ids[st.ID] = true
		}
		for _, st := range steps {
			for _, d := range st.DependsOn {
				if !ids[d] && d != "done" {
					t.Fatalf("unknown dependency %q validated", d)
				}
			}
		}
	})
}
