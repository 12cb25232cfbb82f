dataset "d" {
  source {
    url = "data.bin"
  }
  format = "hdf5" # ERROR: Unsupported dataset format
  train  = ["data.bin"]
}
