symbi {
  telemetry {
    endpoint        = "localhost:4318" # ERROR: Invalid endpoint
    protocol        = "http/json" # ERROR: Invalid value for protocol
    traces_exporter = "jaeger" # ERROR: Invalid value for traces_exporter
    sampler         = "always_on"
    sampler_arg     = 0.5 # ERROR: Unused sampler_arg
    on_failure      = "abort" # ERROR: Invalid value for on_failure
  }
  decision_log { # ERROR: Missing required argument
  }
}
