model "m" { # ERROR: Unclosed configuration block
  provider = "scripted"
