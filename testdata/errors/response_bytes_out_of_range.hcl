model "tiny" {
  provider           = "openai"
  name               = "x"
  max_response_bytes = 1000 # ERROR: Invalid value
}
model "huge" {
  provider           = "openai"
  name               = "x"
  max_response_bytes = 16777217 # ERROR: Invalid value
}
model "fraction" {
  provider           = "openai"
  name               = "x"
  max_response_bytes = 4096.5 # ERROR: Invalid value
}
model "ok" {
  provider           = "openai"
  name               = "x"
  max_response_bytes = 1024
}
