model "m" {
  provider = "scripted"
  script   = "scripts/hello.json"
}

model "m" { # ERROR: Duplicate model "m"
  provider = "scripted"
  script   = "scripts/hello.json"
}
