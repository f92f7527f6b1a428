# Plan and execute: a plan of three steps, two of them in parallel, then an
# answer from their results.

run "plans_three_steps" {
  assert {
    condition     = run.answer == "Yes: 6 * 7 and 100 - 58 are both 42."
    error_message = "The answer compares the two results: ${run.answer}"
  }
  assert {
    condition     = length(jsondecode(one([for e in run.journal : e.data if e.event == "plan_created"])).steps) == 3
    error_message = "The plan has three steps."
  }
  assert {
    condition     = alltrue([for e in run.journal : jsondecode(e.data).status == "done" if e.event == "step_finished"])
    error_message = "Every step is done."
  }
  assert {
    condition     = sort([for c in run.tool_calls : jsondecode(c.arguments).expression]) == tolist(["100 - 58", "6 * 7"])
    error_message = "Each computing step calls the calculator."
  }
}
