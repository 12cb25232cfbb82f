dataset "d" {
  source {
    url = "data.h5"
  }
  format = "hdf5" # ERROR: No reader for this format yet
  train  = ["data.h5"]
}
