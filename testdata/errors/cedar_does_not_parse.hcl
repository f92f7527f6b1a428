policy "cedar" { # ERROR: Invalid Cedar policy
  cedar {
    policies = ["policies/broken.cedar"]
  }
}
