modle "fast" { # ERROR: Unsupported block type
}
