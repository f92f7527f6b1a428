# A policy pack a security team can start from. Three policies gate every
# action, in this order:
#
#   policy.guardrails  built-in rules: the few things nobody may ever do
#   policy.gate        OPA: shell allow-list, spend limits, destructive effects
#                      ask a person, search results capped (modify)
#   policy.grants      Cedar: which team's agents may use which tools
#
# A deny anywhere stops the chain; a tool call no policy allows is denied
# (on_no_policy = "deny"). Check and test the pack with
#
#   symbi validate examples/policies
#   symbi policy test examples/policies
#   symbi policy eval policy.gate --action '{"tool":"shell","arguments":{"cmd":"git push"}}' examples/policies
#
# docs/policy.md explains every part.

symbi {
  state_dir = ".symbi" # approval requests wait in .symbi/approvals/
}

model "offline" {
  provider = "scripted"
  script   = "scripts/ok.json"
  pricing { # priced like a small hosted model, so the spend limits have something to count
    input_usd_per_mtok  = 0.15
    output_usd_per_mtok = 0.60
  }
}

tool "web_search" {
  description = "Search the web"
  parameters = {
    type = "object"
    properties = {
      query       = { type = "string" }
      max_results = { type = "integer", minimum = 1 }
    }
    required = ["query"]
  }
  http {
    url    = "http://127.0.0.1:8080/search"
    method = "POST"
  }
  effect     = "read"
  idempotent = true
  tags       = ["web"]
}

tool "read_file" {
  description = "Read a file in the workspace"
  builtin     = "read_file"
}

tool "write_file" {
  description = "Write a file in the workspace"
  builtin     = "write_file"
}

tool "shell" {
  description = "Run one allow-listed command (no shell)"
  parameters = {
    type       = "object"
    properties = { cmd = { type = "string" } }
    required   = ["cmd"]
  }
  command {
    argv = ["./tools/shell.sh"]
  }
  effect = "write"
  tags   = ["exec"]
}

tool "delete_file" {
  description = "Delete a file"
  parameters = {
    type       = "object"
    properties = { path = { type = "string" } }
    required   = ["path"]
  }
  command {
    argv = ["./tools/delete.sh"]
  }
  effect   = "destructive"
  approval = "always" # a person approves every call, whatever the policies say
}

policy "guardrails" {
  rules {
    deny = [
      "shell:cmd=sudo*",
      "shell:cmd=*rm -rf*",
      "write_file:path=/etc/*",
      "write_file:path=*.ssh/*",
      "respond:content=*BEGIN PRIVATE KEY*",
    ]
  }
}

policy "gate" {
  opa {
    modules = ["policies/gate.rego", "policies/commands.rego", "policies/gate_test.rego"]
    data    = "policies/data.json"
    query   = "data.symbi.gate.decision"
  }
}

policy "grants" {
  cedar {
    policies = ["cedar/grants.cedar"]
    entities = "cedar/entities.json"
    schema   = "cedar/symbi.cedarschema"
  }
}

budget "standard" {
  max_iterations   = 10
  max_tool_calls   = 8
  max_total_tokens = 50000
  max_cost_usd     = 0.50
  timeout          = "2m"
}

agent "researcher" {
  description = "Finds facts; may search, read and run allow-listed commands"
  model       = model.offline
  system      = "You research questions and answer briefly."
  tools       = [tool.web_search, tool.read_file, tool.shell]
  policies    = [policy.guardrails, policy.gate, policy.grants]
  budget      = budget.standard
  delegates   = [agent.critic]
  loop {
    mode = "react"
  }
}

agent "writer" {
  description = "Writes files in the workspace"
  model       = model.offline
  system      = "You write the files you are asked for."
  tools       = [tool.read_file, tool.write_file]
  policies    = [policy.guardrails, policy.gate, policy.grants]
  budget      = budget.standard
  loop {
    mode = "react"
  }
}

agent "janitor" {
  description = "Cleans up; the only agent that may delete, and only with a person's approval"
  model       = model.offline
  system      = "You remove files that are no longer needed."
  tools       = [tool.shell, tool.delete_file]
  policies    = [policy.guardrails, policy.gate, policy.grants]
  budget      = budget.standard
  loop {
    mode = "react"
  }
}

agent "critic" {
  description = "Reviews answers; uses no tools"
  model       = model.offline
  system      = "You check answers for mistakes."
  policies    = [policy.grants]
}
