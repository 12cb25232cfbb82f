command "a" {
  run = ["true"]
}
command "b" {
  run = ["cat", command.a.logg] # ERROR: Unsupported attribute
}
