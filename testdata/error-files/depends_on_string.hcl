command "a" {
  run = ["true"]
}
command "b" {
  run        = ["true"]
  depends_on = ["command.a"] # ERROR: Invalid depends_on reference
}
