model "priced" {
  provider = "openai"
  name     = "x"
  pricing {
    input_usd_per_mtok  = 1
    output_usd_per_mtok = 2
  }
}

model "free" {
  provider = "openai"
  name     = "y"
}

router "r" {
  models = [model.priced, model.free]
}

budget "b" {
  max_cost_usd = 0.5
}

agent "a" {
  model  = router.r # ERROR: Model without pricing under a cost limit
  budget = budget.b
}
