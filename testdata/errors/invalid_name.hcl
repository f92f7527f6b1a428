model "Fast" { # ERROR: Invalid name
  provider = "scripted"
  script   = "scripts/hello.json"
}
