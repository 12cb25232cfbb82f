module "fashion" {
  source = "stdlib/datasets/fashion_mnist"
}
command "c" {
  run = ["ls", module.fashion.datasett.path] # ERROR: Reference to undeclared output value
}
