symbi {
  required_version = ">= one" # ERROR: Invalid version constraint
}
