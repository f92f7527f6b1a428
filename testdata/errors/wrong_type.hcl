budget "b" {
  max_iterations = "many" # ERROR: Incorrect attribute value type
}
