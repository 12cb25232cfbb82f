module "fashion" {
  source = "stdlib/datasets/fashion_mnst" # ERROR: Invalid module source
}
