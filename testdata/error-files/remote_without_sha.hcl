dataset "d" {
  source {
    url = "https://example.org/data.tar.gz" # ERROR: Invalid dataset source
  }
  format = "raw"
}
