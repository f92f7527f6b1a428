policy "cedar" {
  cedar {
    policies = ["policies/broken.cedar"] # ERROR: Invalid Cedar policy
  }
}
