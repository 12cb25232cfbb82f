module "m" {
  source = "./module-without-hcl" # ERROR: No configuration files
}
