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
  tools = [tool.calc]
  loop {
    on_no_policy = "allow"
    tool_choice  = "calc2" # ERROR: Invalid value for tool_choice
  }
}
