variable "seed" {
  default = 1
}
variable "seed" { # ERROR: Duplicate variable block
  default = 2
}
