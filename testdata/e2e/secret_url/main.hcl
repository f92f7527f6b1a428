# A model whose endpoint URL comes from the environment and carries a secret
# (some gateways take the key in the path or the query). The e2e test points
# it at a closed port: the connection error must not show the URL.

model "gateway" {
  provider = "openai"
  name     = "e2e-model"
  base_url = env("SYMBI_E2E_BASE_URL")
  timeouts {
    total = "5s"
  }
  retry {
    max_attempts = 1
  }
}

agent "caller" {
  model = model.gateway
  loop {
    mode = "simple"
  }
}
