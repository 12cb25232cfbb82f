encoder "vit" {
  arch  = "vit"
  dim   = 30
  heads = 4 # ERROR: Invalid value
}
encoder "resnet" {
  arch     = "resnet"
  channels = [16, 32, 64]
  blocks   = [2, 2] # ERROR: Invalid value
}
encoder "transformer" {
  arch = "transformer" # ERROR: Unsupported value
}
