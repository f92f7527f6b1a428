model "m" {
  provider = "scripted"
  script   = "scripts/hello.json"
}

tool "fetch" {
  description = "Fetch"
  builtin     = "http_get"
}

agent "a" {
  model = model.m
  tools = [tool.fetch]
  loop { on_no_policy = "allow" }
  pre_hydrate {
    resolvers = { link = tool.fetch } # ERROR: Unknown reference kind
  }
}
