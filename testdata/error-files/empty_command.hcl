command "c" {
  run = [] # ERROR: Empty command
}
