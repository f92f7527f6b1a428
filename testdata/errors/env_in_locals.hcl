locals {
  key = env("API_KEY") # ERROR: env() not allowed here
}
