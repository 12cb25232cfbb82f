command "c" {
  count = -1 # ERROR: Invalid count argument
  run   = ["true"]
}
