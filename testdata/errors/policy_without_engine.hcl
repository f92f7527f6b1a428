policy "empty" { # ERROR: Policy without engine
}
