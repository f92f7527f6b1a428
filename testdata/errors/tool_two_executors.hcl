tool "both" { # ERROR: Tool with more than one executor
  description = "Two ways"
  builtin     = "calculator"
  command {
    argv = ["./calc.sh"]
  }
}
