symbi {
  workspace = "/srv/files" # ERROR: Absolute path
}

tool "fetch" {
  description = "Fetch a page"
  builtin     = "http_get"
  allow_hosts = ["https://docs.example.com/guide"] # ERROR: Invalid host
}

tool "fetch_glob" {
  builtin     = "http_get"
  allow_hosts = ["[a-"] # ERROR: Invalid host
}

tool "fetch_nothing" { # WARNING: http_get allows no host
  builtin = "http_get"
}

tool "calculator" {
  builtin     = "calculator"
  allow_hosts = ["example.com"] # ERROR: Unexpected argument
}

tool "search" {
  description = "Search"
  command {
    argv = ["./search.sh"]
  }
  allow_hosts = ["example.com"] # ERROR: Unexpected argument
}
