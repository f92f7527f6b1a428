model "m" {
  provider = "scripted"
  script   = "scripts/hello.json"
}

agent "a" {
  model = model.m
}

best_of_n "no_block" {
  agent = agent.a
  scorer {
    expr = 1
  }
  selector { # ERROR: Missing command block
    kind = "command"
  }
}

best_of_n "wrong_kind" {
  agent = agent.a
  scorer {
    expr = 1
  }
  selector {
    kind   = "majority_vote"
    effect = "none" # ERROR: Setting of a command selector
    command { # ERROR: Command without kind = "command"
      argv = ["./pick.sh"]
    }
  }
}

best_of_n "zero_timeout" {
  agent = agent.a
  scorer {
    expr = 1
  }
  selector {
    kind    = "command"
    timeout = "0s" # ERROR: Invalid value
    effect  = "sideways" # ERROR: Invalid value for effect
    command {
      argv = [] # ERROR: Empty argv
    }
  }
}
