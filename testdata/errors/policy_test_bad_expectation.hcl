policy "rules" {
  rules {
    allow = ["*"]
  }
}

policy_test "t" {
  policy = policy.rules
  action = { type = "tool_call", tool = "x" }
  expect = "allowed" # ERROR: Invalid value for expect
}
