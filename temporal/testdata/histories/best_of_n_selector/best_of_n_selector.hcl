# Best-of-N with a command selector, offline. Three candidates answer at
# different temperatures on the scripted model; an expression scorer accepts
# every answer that says something; then a script of yours picks one: here,
# scripts/pick_shortest.sh prints the index of the shortest answer. Run it with
#
#   go run ./cmd/symbi run examples/best_of_n_selector.hcl --best-of concise
#
# The selector is a process that acts, so it is a tool call the gate decides,
# named after its block: policy.rules allows "best_of_n.concise" (leave it out
# and the run ends policy_denial). Its call is journalled like any tool's, and
# it runs as a command tool does: no shell of its own, its own process group,
# SYMBI_IDEMPOTENCY_KEY set. What it prints must be an index it was given.

symbi {
  state_dir = ".symbi"
}

variable "input" {
  type    = string
  default = "What is 6 * 7?"
}

model "offline" {
  provider = "scripted"
  script   = "scripts/bon_selector.json"
}

policy "rules" {
  rules {
    allow = ["best_of_n.concise"]
  }
}

agent "writer" {
  description = "Answers a question"
  model       = model.offline
  policies    = [policy.rules]
}

best_of_n "concise" {
  agent      = agent.writer
  candidates = 3

  vary {
    temperature = 0.5 * candidate.index
  }
  scorer {
    expr = trimspace(candidate.content) != ""
  }
  selector {
    kind   = "command"
    effect = "none" # it reads its input and prints an index
    command {
      argv = ["sh", "scripts/pick_shortest.sh"]
    }
  }
}
