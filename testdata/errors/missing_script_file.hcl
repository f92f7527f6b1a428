model "m" {
  provider = "scripted"
  script   = "scripts/nope.json" # ERROR: Cannot read file
}
