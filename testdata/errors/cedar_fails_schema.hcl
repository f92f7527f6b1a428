policy "cedar" { # ERROR: Invalid Cedar policy
  cedar {
    policies = ["policies/typo.cedar"]
    schema   = "policies/symbi.cedarschema"
  }
}
