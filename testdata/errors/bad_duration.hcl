tool "calc" {
  description = "Arithmetic"
  builtin     = "calculator"
  timeout     = "10 seconds" # ERROR: Invalid duration
}
