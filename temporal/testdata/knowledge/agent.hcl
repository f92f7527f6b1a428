# The replay case "knowledge" (replay_test.go): an agent that recalls from
# a store shipped with the configuration (facts.db) before each step; the
# recall is the symbi.knowledge activity on a worker.

model "m" {
  provider = "scripted"
  script   = "script.json"
}

knowledge "facts" {
  path = "facts.db"
}

agent "a" {
  model = model.m
  knowledge {
    store               = knowledge.facts
    max_context_items   = 3
    relevance_threshold = 0.1
  }
}
