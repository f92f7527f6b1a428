# A sensitive variable's value may not enter the plan: using it where the plan
# would hold it (here, a command tool's environment) is a compile error that
# names the place and never shows the value.

variable "pin" {
  type      = string
  sensitive = true
}

model "offline" {
  provider = "scripted"
  script   = "script.json"
}

tool "unlock" {
  description = "Unlocks with the pin"
  command {
    argv = ["sh", "-c", "cat >/dev/null; echo unlocked"]
    env  = { PIN = var.pin }
  }
}

policy "rules" {
  rules {
    allow = ["unlock"]
  }
}

agent "locksmith" {
  model    = model.offline
  tools    = [tool.unlock]
  policies = [policy.rules]
}
