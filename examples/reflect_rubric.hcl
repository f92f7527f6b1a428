# reflect_and_retry against a rubric, offline: with no evaluator agent, the
# agent's own model scores each answer per criterion, and the scores are
# combined by weight. The first answer scores 0.7 × 0.2 + 0.3 × 1 = 0.44,
# between retry_score and revise_score, so the run starts over; the second
# scores 0.7 × 1 + 0.3 × 0.9 = 0.97 and passes. Run it with
#
#   go run ./cmd/symbi run examples/reflect_rubric.hcl

symbi {
  state_dir = ".symbi"
}

variable "input" {
  type    = string
  default = "Name the largest planet in the solar system."
}

model "offline" {
  provider = "scripted"
  script   = "scripts/reflect_rubric.json"
}

agent "astronomer" {
  description = "Answers astronomy questions in a few words"
  model       = model.offline

  loop {
    mode = "reflect_and_retry"
  }

  reflect {
    max_attempts = 2
    pass_score   = 0.8
    revise_score = 0.6
    retry_score  = 0.3

    rubric {
      criterion "accuracy" {
        weight      = 0.7
        description = "the answer is correct"
      }
      criterion "brevity" {
        weight      = 0.3
        description = "the answer is a few words"
      }
    }
  }
}
