dataset "d" { # ERROR: Missing required argument
  source {
    url = "data.bin"
  }
}
