policy "rego" {
  opa {
    modules = ["policies/*.rgo"] # ERROR: No files match
  }
}
