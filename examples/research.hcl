# A research agent behind a router: two offline models that differ in
# quality and price, a read-only tool profile, a rules policy, a budget with
# a cost limit, a recovery chain for its tools, and pre-hydration of file
# references found in the question. Everything runs offline:
#
#   symbi plan examples/research.hcl
#   symbi run examples/research.hcl "What is 6 * 7?"

symbi {
  state_dir = ".symbi"
}

variable "input" {
  type        = string
  default     = "What is 6 * 7?"
  description = "The question, when none is given on the command line"
}

locals {
  house_style = "Answer in one or two sentences."
}

model "small" {
  provider       = "scripted"
  script         = "scripts/ex_research.json"
  context_window = 32000
  quality        = 0.6
  latency        = 0.9
  pricing {
    input_usd_per_mtok  = 0.15
    output_usd_per_mtok = 0.60
  }
}

model "large" {
  provider       = "scripted"
  script         = "scripts/ex_research.json"
  context_window = 128000
  quality        = 0.9
  latency        = 0.4
  pricing {
    input_usd_per_mtok  = 2.50
    output_usd_per_mtok = 10.00
  }
}

router "balanced" {
  strategy        = "balanced"
  models          = [model.small, model.large]
  prefer          = model.small
  require         = ["tools"]
  minimum_quality = 0.5
}

tool "calculator" {
  description = "Evaluate an arithmetic expression"
  builtin     = "calculator"
  recovery    = recovery.patient
}

tool "clock" {
  description = "The current date and time"
  builtin     = "clock"
}

tool "read_file" {
  description = "Read a text file under the configuration directory"
  builtin     = "read_file"
  timeout     = "5s"
  circuit_breaker {
    failure_threshold   = 3
    recovery_timeout    = "30s"
    half_open_max_calls = 1
  }
}

tool "write_file" {
  description = "Write a text file"
  builtin     = "write_file"
}

tool_profile "readonly" {
  include = ["read_*", "calculator", "clock"]
  exclude = ["*_delete"]
}

recovery "patient" {
  retry {
    max_attempts    = 2
    initial_backoff = "100ms"
    on              = ["timeout", "transport"]
  }
  cached_result {
    max_staleness = "5m"
  }
  llm_recovery {
    max_attempts = 1
  }
  dead_letter {}
}

policy "research_rules" {
  rules {
    deny  = ["read_file:path=/etc/*"]
    ask   = ["write_*"]
    allow = ["calculator", "clock", "read_*"]
  }
}

budget "research" {
  max_iterations   = 8
  max_model_calls  = 6
  max_tool_calls   = 6
  max_total_tokens = 40000
  max_cost_usd     = 0.10
  timeout          = "2m"
}

agent "researcher" {
  description  = "Finds facts with tools and answers briefly"
  model        = router.balanced
  system       = "${file("prompts/researcher.md")}\n${local.house_style}"
  tools        = [tool.calculator, tool.clock, tool.read_file, tool.write_file]
  tool_profile = tool_profile.readonly
  policies     = [policy.research_rules]
  budget       = budget.research

  loop {
    mode                 = "react"
    tool_timeout         = "10s"
    max_concurrent_tools = 2
    temperature          = 0.2
  }

  context {
    strategy     = "observation_masking"
    token_budget = 16000
    recent       = 4
  }

  plan { # used when a run switches this agent to plan_execute
    max_steps          = 5
    max_parallel_steps = 2
    step_timeout       = "30s"
  }

  progress {
    max_reattempts_per_step = 2
    similarity_threshold    = 0.85
    on_limit                = "abort"
  }

  pre_hydrate {
    resolvers          = { file = tool.read_file }
    max_references     = 3
    max_context_tokens = 2000
    timeout            = "5s"
  }
}
