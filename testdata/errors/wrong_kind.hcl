model "m" {
  provider = "scripted"
  script   = "scripts/hello.json"
}

tool "calc" {
  description = "Arithmetic"
  builtin     = "calculator"
}

agent "a" {
  model = tool.calc # ERROR: Wrong kind of reference
  tools = [tool.calc]
  loop { on_no_policy = "allow" }
}
