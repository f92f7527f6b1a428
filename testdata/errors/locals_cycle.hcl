locals {
  a = local.b # ERROR: Cycle in local values
  b = "${local.c}!"
  c = local.a
}
