variable "q" {
  default = "a"
}

variable "q" { # ERROR: Duplicate variable "q"
  default = "b"
}
