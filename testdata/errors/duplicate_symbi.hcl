symbi {
  state_dir = ".symbi"
}

symbi { # ERROR: Duplicate symbi block
  journal_sync = "always"
}
