# Best-of-N by majority vote: five candidates on the scripted model, one
# rejected by the scorer, "42" wins three votes to one.

run "majority_vote" {
  best_of_n = best_of_n.answer

  assert {
    condition     = run.answer == "42"
    error_message = "The majority answer wins: ${run.answer}"
  }
  assert {
    condition     = length([for e in run.journal : e if e.event == "candidate_started"]) == 5
    error_message = "Five candidates run."
  }
  assert {
    condition     = one([for e in run.journal : jsondecode(e.data).votes if e.event == "candidate_selected"]) == 3
    error_message = "42 wins with three votes."
  }
}
