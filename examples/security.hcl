# Defence in depth: built-in rules, an OPA policy and a Cedar policy gate
# every action in order, and policy_test blocks pin their decisions. The Rego
# and Cedar files are the policy pack's, in examples/policies/policies/ and
# examples/policies/cedar/.
#
#   symbi validate examples/security.hcl   # compiles the Rego, validates the Cedar
#   symbi policy test examples/security.hcl

model "offline" {
  provider = "scripted"
  script   = "scripts/ex_research.json"
  pricing {
    input_usd_per_mtok  = 0.15
    output_usd_per_mtok = 0.60
  }
}

tool "calculator" {
  description = "Evaluate an arithmetic expression"
  builtin     = "calculator"
}

tool "shell" {
  description = "Run an allow-listed command"
  parameters = {
    type       = "object"
    properties = { cmd = { type = "string" } }
    required   = ["cmd"]
  }
  command {
    argv = ["policies/tools/shell.sh"]
  }
  effect   = "destructive"
  approval = "policy"
}

policy "guardrails" {
  rules {
    deny  = ["shell:cmd=sudo*", "shell:cmd=*rm -rf*"]
    allow = ["calculator"]
  }
}

policy "gate" {
  opa {
    modules = ["policies/policies/gate.rego", "policies/policies/commands.rego"]
    data    = "policies/policies/data.json"
    query   = "data.symbi.gate.decision"
  }
}

policy "grants" {
  cedar {
    policies = ["policies/cedar/grants.cedar"]
    entities = "policies/cedar/entities.json"
    schema   = "policies/cedar/symbi.cedarschema"
  }
}

agent "researcher" {
  model    = model.offline
  tools    = [tool.calculator, tool.shell]
  policies = [policy.guardrails, policy.gate, policy.grants]
  loop {
    on_no_policy = "deny"
  }
}

policy_test "no_sudo" {
  policy = policy.guardrails
  agent  = agent.researcher
  action = { type = "tool_call", tool = "shell", arguments = { cmd = "sudo rm -rf /" } }
  expect = "deny"
}

policy_test "calculator_allowed" {
  policy = policy.guardrails
  action = { type = "tool_call", tool = "calculator", arguments = { expression = "6*7" } }
  expect = "allow"
}
