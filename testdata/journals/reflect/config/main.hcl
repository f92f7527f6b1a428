# The reflect_and_retry mode (examples/reflect.hcl): the writer drafts, the
# critic agent scores, a revision passes. Recorded with --agent writer.

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
