model "m" {
  provider = "scripted"
  script   = "scripts/hello.json"
}

agent "a" {
  model  = model.m
  system = env("SYSTEM_PROMPT") # ERROR: env() not allowed here
}
