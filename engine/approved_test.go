package engine

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestApprovedCannotBeForged compiles code outside package policy that
// tries to obtain a policy.Approved without the gate, and expects the Go
// compiler to refuse each attempt: the phase order Reason → Gate → Act is
// enforced by the type system, not by convention.
func TestApprovedCannotBeForged(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not found")
	}
	modRoot, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, body, want string
	}{
		{"struct literal", `var _ = policy.Approved{action: policy.Action{Type: policy.ToolCall, Tool: "shell"}}`, "unexported field action"},
		{"unexported constructor", `var _ = policy.approve(policy.Action{}, nil)`, "undefined: policy.approve"},
		{"action where an approval is needed", `func f(tb *builtins.Toolbox) { tb.Call(context.Background(), policy.Action{Type: policy.ToolCall, Tool: "shell"}) }`, "cannot use"},
		{"conversion", `type mine struct{ a policy.Action; d []policy.Decision }
var _ = policy.Approved(mine{})`, "cannot convert"},
	}
	// The control proves the harness compiles good code: it uses the
	// Approved it is given, as the engine does.
	control := `func f(tb *builtins.Toolbox, a policy.Approved) { tb.Call(context.Background(), a) }`
	build := func(body string) (string, error) {
		src := "package forge\n\nimport (\n\t\"context\"\n\n\t\"github.com/symbi-dev/symbi/builtins\"\n\t\"github.com/symbi-dev/symbi/policy\"\n)\n\nvar _ = context.Background\nvar _ *builtins.Toolbox\n\n" + body + "\n"
		dir := t.TempDir()
		file := filepath.Join(dir, "forge.go")
		if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		// The overlay puts the file inside the module without writing to it.
		target := filepath.Join(modRoot, "engine", "internal", "forge", "forge.go")
		ov, _ := json.Marshal(map[string]any{"Replace": map[string]string{target: file}})
		ovPath := filepath.Join(dir, "overlay.json")
		if err := os.WriteFile(ovPath, ov, 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(gobin, "build", "-overlay", ovPath, "./engine/internal/forge")
		cmd.Dir = modRoot
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := build(control); err != nil {
		t.Fatalf("the control does not compile: %v\n%s", err, out)
	}
	for _, c := range cases {
		out, err := build(c.body)
		if err == nil {
			t.Errorf("%s: compiled; an Approved was forged", c.name)
			continue
		}
		if !strings.Contains(out, c.want) {
			t.Errorf("%s: compile error does not mention %q:\n%s", c.name, c.want, out)
		}
	}
}
