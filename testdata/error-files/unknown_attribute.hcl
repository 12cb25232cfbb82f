dataset "d" {
  source {
    url = "data.bin"
  }
  format = "raw"
  formt  = "idx" # ERROR: Unsupported argument
}
