command "c" {
  run = ["true"]
  resources {
    cpus = -1 # ERROR: Invalid resources value
  }
}
