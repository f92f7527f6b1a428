policy "cedar" {
  cedar {
    policies = ["policies/typo.cedar"] # ERROR: Invalid Cedar policy
    schema   = "policies/symbi.cedarschema"
  }
}
