dataset "gen" {
  format = "generated"
  generator {
    task  = "clevr" # ERROR: Invalid generator
    train = 10
    test  = 10
  }
}
adapter "temporal" {
  task  = "video"
  dim   = 30
  heads = 4 # ERROR: Invalid value
}
adapter "probe" {
  task = "probing" # ERROR: Unsupported value
}
recipe "r" {
  mode = "frozen" # ERROR: Unsupported value
}
encoder "e" {
  arch        = "convnet"
  input_shape = [3, 32] # ERROR: Invalid value
}
