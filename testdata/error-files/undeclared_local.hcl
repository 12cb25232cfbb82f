locals {
  models = ["cnn"]
}
command "c" {
  run = ["echo", local.model[0]] # ERROR: Reference to undeclared local value
}
