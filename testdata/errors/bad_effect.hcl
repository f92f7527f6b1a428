tool "calc" {
  description = "Arithmetic"
  builtin     = "calculator"
  effect      = "harmless" # ERROR: Invalid value for effect
}
