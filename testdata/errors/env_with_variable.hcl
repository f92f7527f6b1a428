variable "path" {
  default = "/v1"
}

model "remote" {
  provider = "openai"
  name     = "m"
  base_url = "${env("HOST")}${var.path}" # ERROR: Reference in a run-time expression
}
