model "m" {
  provider = "scripted"
  script   = "scripts/hello.json"
}

tool "lonely" { # WARNING: Tool not used
  description = "Nobody calls me"
  builtin     = "clock"
}

agent "a" {
  model = model.m
}
