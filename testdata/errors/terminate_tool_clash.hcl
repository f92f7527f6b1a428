model "m" {
  provider = "scripted"
  script   = "scripts/hello.json"
}

tool "terminate" {
  description = "Stops the machine"
  builtin     = "calculator"
}

agent "a" {
  model = model.m
  tools = [tool.terminate] # ERROR: Tool name clashes with terminate
  loop {
    on_no_policy    = "allow"
    allow_terminate = true
  }
}

agent "b" {
  model = model.m
  loop {
    mode            = "simple"
    allow_terminate = true # WARNING: allow_terminate unused
  }
}
