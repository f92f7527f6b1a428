# A tool call never reaches an executor without a gate decision.
#
# Every agent's model proposes the same call of the "touch" command tool,
# which writes var.marker when it runs. Each agent is gated differently:
# denied by built-in rules, by OPA, by Cedar, by no policy at all
# (on_no_policy defaults to deny), asked of a person through the approval
# queue, or allowed. The e2e test checks the marker after each run.

variable "marker" {
  type        = string
  description = "the file the touch tool creates when it runs"
}

model "proposer" {
  provider = "scripted"
  script   = "script.json"
}

# Proposes the call with arguments that break the tool's schema.
model "sloppy" {
  provider = "scripted"
  script   = "script_invalid.json"
}

tool "touch" {
  description = "Creates the marker file"
  parameters = {
    type                 = "object"
    properties           = { reason = { type = "string" } }
    additionalProperties = false
  }
  command {
    argv = ["sh", "-c", "cat >\"$MARKER\"; echo touched"] # the marker holds the arguments it got
    env  = { MARKER = var.marker }
  }
  effect = "write"
}

# Always fails; its recovery falls back to touch, which must be gated like
# any other call.
tool "broken" {
  description = "Fails every time"
  parameters = {
    type                 = "object"
    properties           = { reason = { type = "string" } }
    additionalProperties = false
  }
  command {
    argv = ["sh", "-c", "cat >/dev/null; echo broken >&2; exit 1"]
  }
  effect   = "write"
  recovery = recovery.touch_instead
}

recovery "touch_instead" {
  fallback {
    tools = [tool.touch]
  }
}

# Proposes a call of the broken tool.
model "breaker" {
  provider = "scripted"
  script   = "script_broken.json"
}

policy "broken_only" {
  rules {
    deny  = ["touch"]
    allow = ["broken"]
  }
}

policy "broken_and_touch" {
  rules {
    allow = ["broken", "touch"]
  }
}

policy "rules_deny" {
  rules {
    deny = ["touch"]
  }
}

policy "rules_allow" {
  rules {
    allow = ["touch"]
  }
}

policy "rules_ask" {
  rules {
    ask = ["touch"]
  }
}

policy "opa_deny" {
  opa {
    modules = ["policies/gate.rego"]
    query   = "data.e2e.gate.decision"
  }
}

policy "opa_modify" {
  opa {
    modules = ["policies/modify.rego"]
    query   = "data.e2e.modify.decision"
  }
}

policy "cedar_deny" {
  cedar {
    policies = ["policies/gate.cedar"]
  }
}

budget "short" {
  max_iterations = 4
  timeout        = "30s"
}

agent "rules_denied" {
  model    = model.proposer
  tools    = [tool.touch]
  policies = [policy.rules_deny]
  budget   = budget.short
}

agent "opa_denied" {
  model    = model.proposer
  tools    = [tool.touch]
  policies = [policy.opa_deny]
  budget   = budget.short
}

agent "cedar_denied" {
  model    = model.proposer
  tools    = [tool.touch]
  policies = [policy.cedar_deny]
  budget   = budget.short
}

# Allowed by the first policy, denied by the second: a deny anywhere in the
# chain stops the call.
agent "chain_denied" {
  model    = model.proposer
  tools    = [tool.touch]
  policies = [policy.rules_allow, policy.opa_deny]
  budget   = budget.short
}

agent "unaddressed" {
  model  = model.proposer
  tools  = [tool.touch]
  budget = budget.short
}

agent "asked" {
  model    = model.proposer
  tools    = [tool.touch]
  policies = [policy.rules_ask]
  budget   = budget.short
}

# Allowed, but the arguments break the schema: validated before the gate,
# never executed.
agent "invalid_arguments" {
  model    = model.sloppy
  tools    = [tool.touch]
  policies = [policy.rules_allow]
  budget   = budget.short
}

# OPA rewrites the arguments, the rules allow the rewritten call: the
# executor must get the rewritten arguments.
agent "modified" {
  model    = model.proposer
  tools    = [tool.touch]
  policies = [policy.opa_modify, policy.rules_allow]
  budget   = budget.short
}

agent "fallback_denied" {
  model    = model.breaker
  tools    = [tool.broken, tool.touch]
  policies = [policy.broken_only]
  budget   = budget.short
}

agent "fallback_allowed" {
  model    = model.breaker
  tools    = [tool.broken, tool.touch]
  policies = [policy.broken_and_touch]
  budget   = budget.short
}

agent "allowed" {
  model    = model.proposer
  tools    = [tool.touch]
  policies = [policy.rules_allow]
  budget   = budget.short
}

# Delegation: the delegate action is gated by the delegating agent's
# policies, and the delegate's own tool calls by the delegate's.
model "boss" {
  provider = "scripted"
  script   = "script_boss.json"
}

model "trusting_boss" {
  provider = "scripted"
  script   = "script_trusting_boss.json"
}

policy "no_delegation" {
  rules {
    deny = ["delegate"]
  }
}

policy "delegation" {
  rules {
    allow = ["delegate"]
  }
}

# Its policy denies touch.
agent "worker" {
  model    = model.proposer
  tools    = [tool.touch]
  policies = [policy.rules_deny]
  budget   = budget.short
}

# Its policy allows touch.
agent "trusted_worker" {
  model    = model.proposer
  tools    = [tool.touch]
  policies = [policy.rules_allow]
  budget   = budget.short
}

agent "boss_denied" {
  model     = model.boss
  delegates = [agent.worker]
  policies  = [policy.no_delegation]
  budget    = budget.short
}

agent "boss" {
  model     = model.boss
  delegates = [agent.worker]
  policies  = [policy.delegation]
  budget    = budget.short
}

agent "trusting_boss" {
  model     = model.trusting_boss
  delegates = [agent.trusted_worker]
  policies  = [policy.delegation]
  budget    = budget.short
}
