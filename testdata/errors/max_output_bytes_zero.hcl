tool "t" {
  description      = "A tool whose output would be cut to nothing"
  builtin          = "clock"
  max_output_bytes = 0 # ERROR: Invalid value
}
