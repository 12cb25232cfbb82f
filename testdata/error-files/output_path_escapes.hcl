command "c" {
  run     = ["true"]
  outputs = { x = "../x.txt" } # ERROR: Invalid output path
}
