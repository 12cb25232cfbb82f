locals {
  ratio = 10 / 0 # ERROR: Infinite number
}
recipe "r" {
  lr = 1 / 0 # ERROR: Infinite number
}
