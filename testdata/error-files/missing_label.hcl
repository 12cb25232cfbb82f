command { # ERROR: Missing name for command
  run = ["true"]
}
