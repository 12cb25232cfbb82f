variable "lr" { # ERROR: No value for required variable
  type = number
}
command "c" {
  run = ["echo", var.lr]
}
