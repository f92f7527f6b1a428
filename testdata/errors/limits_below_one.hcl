# Counts and caps that 0 would make meaningless: not "unlimited", as 0 is
# for a budget.
tool "t" {
  description      = "A tool whose output would be cut to nothing"
  builtin          = "clock"
  max_output_bytes = 0 # ERROR: Invalid value
  circuit_breaker {
    failure_threshold   = 0 # ERROR: Invalid value
    half_open_max_calls = 0 # ERROR: Invalid value
  }
  recovery = recovery.r
}

recovery "r" {
  retry {
    multiplier = 0 # ERROR: Invalid value
  }
}
