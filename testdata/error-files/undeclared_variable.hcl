variable "seed" {
  default = 1
}
command "c" {
  run = ["echo", var.sed] # ERROR: Reference to undeclared input variable
}
