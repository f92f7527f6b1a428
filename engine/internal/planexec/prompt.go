package planexec

import (
	"fmt"
	"sort"
	"strings"

	"github.com/symbi-dev/symbi/engine/internal/answer"
	"github.com/symbi-dev/symbi/provider"
)

// Prompt is the planning request for task, with at most limit steps (0:
// no limit); after a failed step, done holds what earlier plans finished
// and failed the failure. docs/reasoning.md shows it.
func Prompt(task string, limit int, tools []provider.ToolSpec, done map[string]Result, failed *StepFailedError) string {
	var b strings.Builder
	b.WriteString("Break the task below into steps. Each step is carried out on its own by an assistant with these tools: ")
	if len(tools) == 0 {
		b.WriteString("(none)")
	}
	for i, t := range tools {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(t.Name)
	}
	b.WriteString(".\n\n<task>\n")
	b.WriteString(task)
	b.WriteString("\n</task>\n")
	if failed != nil {
		b.WriteString("\nA previous plan was partly carried out.\n")
		ids := make([]string, 0, len(done))
		for id := range done {
			ids = append(ids, id)
		}
		sort.Strings(ids) // a prompt that does not depend on map order
		for _, id := range ids {
			res := done[id]
			switch res.Status {
			case Done:
				fmt.Fprintf(&b, "- step %s (%s) is done; its result: %s\n", id, res.Task, answer.Clip(res.Output, 500))
			default:
				fmt.Fprintf(&b, "- step %s (%s) %s: %v\n", id, res.Task, res.Status, res.Err)
			}
		}
		fmt.Fprintf(&b, "Step %s failed: %v\nWrite a new plan for the remaining work only. Do not repeat the finished steps or reuse their ids; a new step may depend on a finished step by its id.\n", failed.Step, failed.Err)
	}
	b.WriteString("\nReply with only a JSON object: {\"steps\": [{\"id\": \"s1\", \"task\": \"what to do\", \"depends_on\": []}]}\n")
	b.WriteString("Ids are short and unique. depends_on lists the ids of the steps whose results a step needs; steps that do not depend on each other run in parallel.")
	if limit > 0 {
		fmt.Fprintf(&b, " Use at most %d steps.", limit)
	}
	return b.String()
}

// SafeID keeps a model-written step id usable in a run id (a file name).
func SafeID(id string) string {
	return strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return r
		}
		return '_'
	}, id)
}
