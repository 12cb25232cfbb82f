module "fashion" {
  source     = "stdlib/datasets/fashion_mnist"
  split_sed  = 3 # ERROR: Unsupported argument
}
