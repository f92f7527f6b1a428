# An agent with memory: a knowledge store it recalls from before each step
# and stores facts in, with directory-scoped conventions.
#
#   symbi run examples/knowledge.hcl "What is symbi written in?"

symbi {
  state_dir = ".symbi"
}

variable "input" {
  type    = string
  default = "What is symbi written in?"
}

model "offline" {
  provider = "scripted"
  script   = "scripts/ex_knowledge.json"
}

knowledge "notes" {
  path        = ".symbi/knowledge/notes.db"
  conventions = "prompts"
}

tool "recall" {
  description = "Recall facts about a subject"
  builtin     = "recall_knowledge"
}

tool "store" {
  description = "Store a fact: subject, predicate, object and confidence"
  builtin     = "store_knowledge"
}

policy "memory" {
  rules {
    allow = ["recall", "store"]
  }
}

agent "librarian" {
  description = "Answers from what it has learnt, and remembers new facts"
  model       = model.offline
  tools       = [tool.recall, tool.store]
  policies    = [policy.memory]

  knowledge {
    store               = knowledge.notes
    max_context_items   = 5
    relevance_threshold = 0.3
    auto_persist        = true
  }
}
