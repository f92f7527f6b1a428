# Reflect against a rubric: Saturn is scored down, Jupiter passes.

run "corrects_itself" {
  assert {
    condition     = run.answer == "Jupiter."
    error_message = "The second attempt is right: ${run.answer}"
  }
  assert {
    condition     = [for e in run.journal : jsondecode(e.data).verdict if e.event == "reflection_evaluated"][1] == "pass"
    error_message = "The second attempt passes the rubric."
  }
}
