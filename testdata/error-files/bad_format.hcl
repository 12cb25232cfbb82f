dataset "d" {
  source {
    url = "data.bin"
  }
  format = "tfrecord" # ERROR: Unsupported dataset format
  train  = ["data.bin"]
}
