# The simple mode: one model call, its answer.

model "m" {
  provider = "scripted"
  script   = "script.json"
}

agent "greeter" {
  model  = model.m
  system = "Greet the user in one sentence."

  loop {
    mode = "simple"
  }
}
