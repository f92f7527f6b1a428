model "m" {
  provider = "scripted"
  provider = "openai" # ERROR: Attribute redefined
}
