recipe "r" {
  iterations = 2.5 # ERROR: Invalid value
}
encoder "e" {
  arch     = "convnet"
  channels = [16, 32.5] # ERROR: Invalid value
}
