model "plain" {
  provider     = "openai"
  name         = "x"
  capabilities = ["streaming"]
}

tool "calc" {
  description = "Arithmetic"
  builtin     = "calculator"
}

agent "a" {
  model = model.plain # ERROR: Model cannot call tools
  tools = [tool.calc]
  loop { on_no_policy = "allow" }
}
