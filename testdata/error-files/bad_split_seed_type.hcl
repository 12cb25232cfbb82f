dataset "d" {
  source {
    url = "data.bin"
  }
  format     = "idx"
  train      = ["a", "b"]
  split_seed = [1] # ERROR: Incorrect attribute value type
}
