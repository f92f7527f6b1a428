variable "limit" {
  type    = number
  default = "many" # ERROR: Invalid value for variable
}
