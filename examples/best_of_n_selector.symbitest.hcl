# Best-of-N with a command selector: three candidates answer on the scripted
# model, the selector script picks the shortest, and the gate decides the
# selector's call like any tool's.

run "shortest_answer" {
  best_of_n = best_of_n.concise

  assert {
    condition     = run.answer == "42."
    error_message = "The selector picks the shortest answer: ${run.answer}"
  }
  assert {
    condition     = length([for e in run.journal : e if e.event == "candidate_started"]) == 3
    error_message = "Three candidates run."
  }
  assert {
    condition     = length([for d in run.decisions : d if d.tool == "best_of_n.concise" && d.decision == "allow"]) == 1
    error_message = "The gate allows the selector's call once."
  }
}
