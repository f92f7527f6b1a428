# A configured tool may not take the name of an action the engine reserves.

tool "respond" { # ERROR: Reserved tool name
  description = "Says something"
  command {
    argv = ["echo", "hi"]
  }
}

tool "delegate" { # ERROR: Reserved tool name
  description = "Hands work on"
  command {
    argv = ["echo", "hi"]
  }
}

# The delegate builtin is the delegate tool itself.
tool "handoff" {
  builtin = "delegate"
}
