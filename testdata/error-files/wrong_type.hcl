dataset "d" {
  source {
    url = "data.bin"
  }
  format       = "idx"
  train        = ["a", "b"]
  val_fraction = "a lot" # ERROR: Incorrect attribute value type
}
