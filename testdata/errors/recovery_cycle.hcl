model "m" {
  provider = "scripted"
  script   = "scripts/hello.json"
}

tool "primary" {
  description = "Primary"
  builtin     = "http_get"
  recovery    = recovery.to_backup
}

tool "backup" {
  description = "Backup"
  builtin     = "http_get"
  recovery    = recovery.to_primary # ERROR: Recovery cycle
}

recovery "to_backup" {
  fallback {
    tools = [tool.backup]
  }
}

recovery "to_primary" {
  fallback {
    tools = [tool.primary]
  }
}

agent "a" {
  model = model.m
  tools = [tool.primary]
  loop { on_no_policy = "allow" }
}
