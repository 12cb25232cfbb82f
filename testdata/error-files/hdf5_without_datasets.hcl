dataset "d" {
  source {
    url = "data.tar"
  }
  format      = "hdf5" # ERROR: Missing datasets
  train       = ["train/*/*.h5"]
  image_size  = [32, 32]
  class_names = ["near", "far"]
}
