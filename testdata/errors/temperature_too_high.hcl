model "m" {
  provider = "scripted"
  script   = "scripts/hello.json"
}

agent "a" {
  model = model.m
  loop {
    temperature = 3 # ERROR: Invalid value
  }
}
