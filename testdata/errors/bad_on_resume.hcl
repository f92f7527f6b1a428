tool "deploy" {
  description = "Deploys"
  command {
    argv = ["./deploy.sh"]
  }
  effect    = "destructive"
  on_resume = "again" # ERROR: Invalid value for on_resume
}

tool "notify" {
  description = "Notifies"
  command {
    argv = ["./notify.sh"]
  }
  on_resume = "Retry" # ERROR: Invalid value for on_resume
}
