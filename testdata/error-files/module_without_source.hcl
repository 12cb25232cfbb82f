module "tier" { # ERROR: Missing required argument
  models = ["cnn"]
}
