# reflect_and_retry, offline. The writer drafts an answer; the critic agent
# scores it; a score between revise_score and pass_score sends the critique
# back for a revision, which then passes. (reflect_rubric.hcl scores against
# a rubric instead of an evaluator agent.) Run it with
#
#   go run ./cmd/symbi run examples/reflect.hcl --agent writer
#
# and watch the two reflection_evaluated events: revise, then pass.

symbi {
  state_dir = ".symbi"
}

variable "input" {
  type    = string
  default = "In one sentence: why is the sky blue?"
}

model "writer" {
  provider = "scripted"
  script   = "scripts/reflect_writer.json"
}

model "critic" {
  provider = "scripted"
  script   = "scripts/reflect_critic.json"
}

agent "critic" {
  description = "Scores answers against a rubric"
  model       = model.critic
  system      = "You are a demanding reviewer. Reply with JSON only."

  loop {
    mode = "simple"
  }
}

agent "writer" {
  description = "Writes short explanations and revises them"
  model       = model.writer
  system      = "You explain science in one plain sentence."

  loop {
    mode = "reflect_and_retry"
  }

  reflect {
    evaluator    = agent.critic
    max_attempts = 3
    pass_score   = 0.75
    revise_score = 0.55
    retry_score  = 0.35
  }
}
