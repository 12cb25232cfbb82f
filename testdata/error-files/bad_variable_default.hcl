variable "lr" {
  type    = number
  default = "fast" # ERROR: Invalid default value for variable
}
