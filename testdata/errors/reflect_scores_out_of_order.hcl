model "m" {
  provider = "scripted"
  script   = "scripts/hello.json"
}

agent "a" {
  model = model.m
  reflect { # ERROR: Inconsistent reflect scores
    pass_score   = 0.5
    revise_score = 0.7
    rubric {
      criterion "accuracy" { weight = 1 }
    }
  }
}
