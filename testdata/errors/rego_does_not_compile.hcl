policy "rego" {
  opa {
    modules = ["policies/broken.rego"] # ERROR: Invalid Rego policy
    query   = "data.symbi.broken.decision"
  }
}
