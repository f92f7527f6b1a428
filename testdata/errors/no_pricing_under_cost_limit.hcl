model "free" {
  provider = "openai"
  name     = "x"
}

budget "b" {
  max_cost_usd = 0.5
}

agent "a" {
  model  = model.free # ERROR: Model without pricing under a cost limit
  budget = budget.b
}
