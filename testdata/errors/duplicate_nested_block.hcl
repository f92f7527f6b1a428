model "m" {
  provider = "scripted"
  script   = "scripts/hello.json"
}

agent "a" {
  model = model.m
  loop {
    mode = "simple"
  }
  loop { # ERROR: Duplicate loop block
    mode = "react"
  }
}
