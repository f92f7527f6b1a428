budget "b" {
  max_iterations = 2.5 # ERROR: Invalid value
}
