policy "cedar" {
  cedar {
    policies = ["policies/typo.cedar"] # ERROR: Invalid Cedar policy
    schema   = "policies/tools_only.cedarschema" # ERROR: Invalid Cedar policy
  }
}
