# Every tool call carries an idempotency key, "<run id>/<iteration>/<call
# id>", to the tool: a command tool in SYMBI_IDEMPOTENCY_KEY, an http tool in
# the Idempotency-Key header (the e2e test's server at var.url answers with
# it), an MCP tool in the request's _meta["symbi.dev/idempotency-key"] (the
# crashtool helper's "record" tool answers with it). The model calls all
# three in one turn.

variable "tool" {
  type = string
}

variable "pids" {
  type = string
}

variable "url" {
  type = string
}

model "m" {
  provider = "scripted"
  script   = "script.json"
}

tool "from_env" {
  description = "Answers with the idempotency key in its environment"
  command {
    argv = ["sh", "-c", "cat >/dev/null; printf 'key=%s' \"$SYMBI_IDEMPOTENCY_KEY\""]
  }
  effect = "write"
}

tool "from_header" {
  description = "Answers with the Idempotency-Key header the server got"
  http {
    url = var.url
  }
  effect = "write"
}

mcp_server "helper" {
  command = [var.tool, "mcp", var.pids]
  effect  = "write"
}

policy "rules" {
  rules {
    allow = ["from_env", "from_header", "record"]
  }
}

agent "keyed" {
  model    = model.m
  tools    = [tool.from_env, tool.from_header, mcp_server.helper]
  policies = [policy.rules]
}
