module "m" {
  source = "./no-such-module" # ERROR: Cannot read configuration
}
