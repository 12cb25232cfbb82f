locals {
  a = 1
}
locals {
  a = 2 # ERROR: Duplicate local value definition
}
