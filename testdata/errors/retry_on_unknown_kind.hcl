recovery "r" {
  retry {
    on = ["timeout", "network"] # ERROR: Invalid value for on
  }
}
