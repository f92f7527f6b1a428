policy "rego" { # ERROR: Invalid Rego policy
  opa {
    modules = ["policies/broken.rego"]
    query   = "data.symbi.broken.decision"
  }
}
