tool "search" {
  description = "Search"
  builtin     = "http_get"
  parameters = { # ERROR: Invalid JSON Schema
    type       = "object"
    properties = { query = { type = "strnig" } }
  }
}
