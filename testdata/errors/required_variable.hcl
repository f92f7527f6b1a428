variable "question" { # ERROR: No value for required variable
  type = string
}
