command "c" {
  count = 100000000 # ERROR: Invalid count argument
  run   = ["true"]
}
