model "m" {
  provider = "scripted"
  script   = "scripts/hello.json"
}

tool "fetch" {
  description = "Fetch a URL"
  builtin     = "http_get"
  allow_hosts = ["example.com"]
}

policy "rules" {
  rules {
    allow = ["fetch"]
  }
}

agent "a" {
  model    = model.m
  policies = [policy.rules]
  pre_hydrate {
    resolvers = { url = tool.fetch } # ERROR: Resolver is not one of the agent's tools
  }
}
