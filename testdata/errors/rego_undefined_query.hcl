policy "rego" { # ERROR: Invalid Rego policy
  opa {
    modules = ["policies/ok.rego"]
    query   = "data.symbi.ok.decision"
  }
}
