# Knowledge: the librarian stores a fact, recalls it, and answers from it.

run "stores_then_recalls" {
  assert {
    condition     = run.answer == "symbi is written in Go."
    error_message = "The answer comes from the recalled fact: ${run.answer}"
  }
  assert {
    condition     = [for c in run.tool_calls : c.name] == ["store", "recall"]
    error_message = "The librarian stores, then recalls."
  }
  assert {
    condition     = strcontains(run.tool_calls[1].result, "symbi written_in Go")
    error_message = "The recall finds the stored fact: ${run.tool_calls[1].result}"
  }
}
