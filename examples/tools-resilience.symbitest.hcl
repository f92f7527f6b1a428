# Tool resilience: the primary search is down, the recovery chain falls back
# to the backup index, and the answer comes from it.

run "falls_back_to_the_backup" {
  assert {
    condition     = strcontains(run.answer, "North Pacific")
    error_message = "The answer comes from the backup index: ${run.answer}"
  }
  assert {
    condition     = anytrue([for e in run.journal : jsondecode(e.data).strategy == "fallback" if e.event == "recovery_triggered"])
    error_message = "The fallback strategy answers."
  }
}

run "answers_from_a_stand_in" {
  # The primary index answering, as a stand-in: the script's turns follow
  # the words of the backup's results, so the stand-in speaks them.
  override_tool {
    target = tool.search
    result = "stand-in for the backup index: sea otters eat urchins; they live in the North Pacific."
  }

  assert {
    condition     = !anytrue([for e in run.journal : e.event == "recovery_triggered"])
    error_message = "With the search answering, nothing needs recovering."
  }
  assert {
    condition     = alltrue([for c in run.tool_calls : c.name == "search" && startswith(c.result, "stand-in")])
    error_message = "Every search is answered by the stand-in."
  }
}
