tool "calc" {
  description = "Arithmetic"
  builtin     = "calculater" # ERROR: Invalid value for builtin
}
