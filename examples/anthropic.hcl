# Claude through Anthropic's native Messages API: streaming, tool use,
# extended thinking (delivered as reasoning, never as the answer, and sent
# back with the tool calls it led to), and the prompt cache, whose reads and
# writes are priced apart. Validating or planning needs no key:
#
#   go run ./cmd/symbi validate examples/anthropic.hcl
#
# Running it calls the API with the key in ANTHROPIC_API_KEY:
#
#   ANTHROPIC_API_KEY=... go run ./cmd/symbi run examples/anthropic.hcl "What is 17 * 23?"
#
# ANTHROPIC_BASE_URL, when set, points it at another endpoint (a gateway, or
# the project's fake server in tests).

symbi {
  state_dir = ".symbi"
}

model "claude" {
  provider       = "anthropic"
  name           = "claude-sonnet-4-5"
  base_url       = env("ANTHROPIC_BASE_URL", "https://api.anthropic.com")
  api_key_env    = "ANTHROPIC_API_KEY"
  context_window = 200000
  quality        = 0.9
  latency        = 0.6

  max_tokens             = 8192 # sent when the agent sets no max_output_tokens
  thinking               = "enabled"
  thinking_budget_tokens = 2048 # counted within max_output_tokens
  prompt_cache           = "5m" # cache the conversation's prefix between turns

  pricing {
    input_usd_per_mtok  = 3
    output_usd_per_mtok = 15
    # cache_read_usd_per_mtok and cache_write_usd_per_mtok default to 0.1
    # and 1.25 times the input price, as Anthropic prices them.
  }
  timeouts {
    total       = "300s"
    connect     = "10s"
    first_event = "60s" # thinking comes first, and can take a while
    idle        = "30s"
  }
}

tool "calculator" {
  description = "Evaluate an arithmetic expression"
  builtin     = "calculator"
}

policy "rules" {
  rules {
    allow = ["calculator"]
  }
}

budget "claude" {
  max_iterations = 6
  max_tool_calls = 6
  max_cost_usd   = 0.50
  timeout        = "5m"
}

agent "assistant" {
  description = "Answers arithmetic questions with the calculator, thinking first"
  model       = model.claude
  system      = "You are a careful assistant. Use the calculator for arithmetic, then answer in one sentence."
  tools       = [tool.calculator]
  policies    = [policy.rules]
  budget      = budget.claude

  loop {
    mode              = "react"
    max_output_tokens = 8192
  }
}
