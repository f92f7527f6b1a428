policy "rules" {
  rules {
    deny = ["shell:cmd"] # ERROR: Invalid rule
  }
}
