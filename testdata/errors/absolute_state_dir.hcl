symbi {
  state_dir = "/var/lib/symbi" # ERROR: Absolute path
}
