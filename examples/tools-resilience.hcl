# Tools that fail, and an agent that keeps going: fallback and circuit
# breaking, offline on the scripted model. Run it with
#
#   go run ./cmd/symbi run examples/tools-resilience.hcl
#
# The primary search tool always fails (examples/tools/search_primary.sh).
# First call: it fails, retry tries once more and fails again, which opens the
# circuit (failure_threshold = 2); the fallback, backup_search, answers.
# Second call: the circuit is open, so the call is refused at once with
# circuit_open (no process starts); retry does not cover circuit_open, and the
# fallback answers again. Every step is a recovery_triggered event in the
# journal (examples/.symbi/runs/<run-id>/journal.jsonl).

symbi {
  state_dir = ".symbi"
}

variable "input" {
  type    = string
  default = "What do sea otters eat, and where do they live?"
}

model "offline" {
  provider = "scripted"
  script   = "scripts/tools_resilience.json"
}

tool "search" {
  description = "Search the primary index"
  parameters = {
    type       = "object"
    properties = { query = { type = "string" } }
    required   = ["query"]
  }
  command {
    argv = ["./tools/search_primary.sh"]
  }
  effect           = "read"
  idempotent       = true
  timeout          = "5s"
  max_output_bytes = 16384
  circuit_breaker {
    failure_threshold   = 2
    recovery_timeout    = "60s"
    half_open_max_calls = 1
  }
  recovery = recovery.search
}

tool "backup_search" {
  description = "Search the local backup index"
  parameters = {
    type       = "object"
    properties = { query = { type = "string" } }
    required   = ["query"]
  }
  command {
    argv = ["./tools/search_backup.sh"]
  }
  effect     = "read"
  idempotent = true
  timeout    = "5s"
}

recovery "search" {
  retry {
    max_attempts    = 2 # attempts in all, the failed one included
    initial_backoff = "50ms"
    max_backoff     = "200ms"
    multiplier      = 2
    jitter          = 0.2
    on              = ["timeout", "transport", "error"]
  }
  fallback {
    tools = [tool.backup_search] # gated like any call: the policy below must allow it
  }
  dead_letter {} # only reached if the backup fails too
}

policy "rules" {
  rules {
    allow = ["search", "backup_search"]
  }
}

budget "resilience" {
  max_iterations   = 6
  max_tool_calls   = 4
  max_total_tokens = 20000
  timeout          = "30s"
}

agent "researcher" {
  description = "Answers questions from search results, whichever backend answers"
  model       = model.offline
  system      = "Search before answering. Answer in two sentences."
  tools       = [tool.search, tool.backup_search]
  policies    = [policy.rules]
  budget      = budget.resilience

  loop {
    mode                 = "react"
    tool_timeout         = "10s"
    max_concurrent_tools = 2
  }
}
