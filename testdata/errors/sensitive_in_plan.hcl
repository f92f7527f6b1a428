# A sensitive variable's value may be used only where it does not reach the
# plan: every plan field that would hold it, however it was derived, is an
# error. Secrets are read at run time with env("NAME").

variable "pin" {
  type      = string
  sensitive = true
  default   = "0000"
}

variable "region" {
  type      = string
  sensitive = true
  default   = "eu"
}

locals {
  greeting = "PIN ${upper(var.pin)}"
  unused   = var.pin
}

tool "show_pin" {
  description = "Shows the pin"
  command {
    argv = ["./show.sh", var.pin] # ERROR: Sensitive value in the plan
    env = {
      PIN    = var.pin # ERROR: Sensitive value in the plan
      REGION = "${var.region}-${local.greeting}" # ERROR: Sensitive value in the plan
    }
  }
  tags = [var.region] # ERROR: Sensitive value in the plan
  parameters = { # ERROR: Sensitive value in the plan
    type       = "object"
    properties = { pin = { type = "string", default = var.pin } }
  }
}

agent "a" {
  model  = model.m
  system = local.greeting # ERROR: Sensitive value in the plan
  tools  = [tool.show_pin]
  loop {
    on_no_policy = "allow"
  }
}

model "m" {
  provider = "scripted"
  script   = "scripts/hello.json"
}
