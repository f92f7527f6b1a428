# Reflect and retry: the critic asks for one revision, then passes it.

run "revises_once" {
  agent = agent.writer

  assert {
    condition     = startswith(run.answer, "Air molecules scatter short blue wavelengths")
    error_message = "The revised answer: ${run.answer}"
  }
  assert {
    condition     = [for e in run.journal : jsondecode(e.data).verdict if e.event == "reflection_evaluated"] == ["revise", "pass"]
    error_message = "Revise, then pass."
  }
}
