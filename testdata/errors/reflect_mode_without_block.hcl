model "m" {
  provider = "scripted"
  script   = "scripts/hello.json"
}

agent "a" { # ERROR: Missing reflect block
  model = model.m
  loop {
    mode = "reflect_and_retry"
  }
}
