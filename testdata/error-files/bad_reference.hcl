command "c" {
  run = ["cat", dataset.nope.path] # ERROR: Reference to undeclared block
}
