recovery "r" { # ERROR: Recovery without strategies
}
