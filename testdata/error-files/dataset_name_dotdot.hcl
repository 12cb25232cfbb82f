dataset "d" {
  source {
    url  = "data.bin"
    name = ".." # ERROR: Invalid dataset source
  }
  format = "raw"
}
