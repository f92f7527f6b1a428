model "m" { # ERROR: Missing required argument
  name = "x"
}
