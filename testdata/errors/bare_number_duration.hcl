budget "b" {
  timeout = 30 # ERROR: Invalid duration
}
