policy "rules" {
  rules {
    allow = ["*"]
  }
}

policy_test "t" {
  policy = policy.rules
  action = { type = "call", tool = "x" } # ERROR: Invalid action
  expect = "allow"
}
