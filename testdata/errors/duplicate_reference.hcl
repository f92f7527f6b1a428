model "m" {
  provider = "scripted"
  script   = "scripts/hello.json"
}

tool "calc" {
  description = "Arithmetic"
  builtin     = "calculator"
}

agent "a" {
  model = model.m
  tools = [tool.calc, tool.calc] # ERROR: Duplicate reference
  loop { on_no_policy = "allow" }
}
