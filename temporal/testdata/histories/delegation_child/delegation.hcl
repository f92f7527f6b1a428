# A lead agent that hands work to a researcher, whose answers a critic
# reviews (reflect_and_retry with the critic as evaluator). Delegation depth
# is bounded and cycles are rejected at compile time.
#
#   symbi run examples/delegation.hcl --agent lead "What is 6 * 7?"

model "lead" {
  provider = "scripted"
  script   = "scripts/ex_delegate.json"
}

model "worker" {
  provider = "scripted"
  script   = "scripts/ex_research.json"
}

model "judge" {
  provider = "scripted"
  script   = "scripts/ex_judge.json"
}

tool "calculator" {
  description = "Evaluate an arithmetic expression"
  builtin     = "calculator"
}

policy "team" {
  rules {
    allow = ["delegate", "calculator"]
  }
}

agent "lead" {
  description = "Splits the question and delegates"
  model       = model.lead
  delegates   = [agent.researcher]
  policies    = [policy.team]
  loop {
    max_delegation_depth = 2
  }
}

agent "researcher" {
  description = "Computes and answers"
  model       = model.worker
  system      = file("prompts/researcher.md")
  tools       = [tool.calculator]
  policies    = [policy.team]
  loop {
    mode = "reflect_and_retry"
  }
  reflect {
    evaluator    = agent.critic
    max_attempts = 2
    pass_score   = 0.75
    revise_score = 0.55
    retry_score  = 0.35
  }
}

agent "critic" {
  description = "Scores an answer between 0 and 1"
  model       = model.judge
  system      = file("prompts/critic.md")
  loop {
    profile = "simple_answer"
  }
}
