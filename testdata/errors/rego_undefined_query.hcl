policy "rego" {
  opa {
    modules = ["policies/ok.rego"]
    query   = "data.symbi.ok.decision" # ERROR: Invalid Rego policy
  }
}
