dataset "d" {
  source {
    url = "data.bin"
  }
  format       = "idx"
  train        = ["a", "b"]
  val_fraction = 1.5 # ERROR: Invalid fraction
}
