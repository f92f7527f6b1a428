policy "two" { # ERROR: Policy with more than one engine
  rules {
    allow = ["*"]
  }
  opa {
    modules = ["policies/ok.rego"]
    query   = "data.symbi.ok.allow"
  }
}
