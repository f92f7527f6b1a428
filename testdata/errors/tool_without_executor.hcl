tool "nothing" { # ERROR: Tool without executor
  description = "Does nothing"
}
