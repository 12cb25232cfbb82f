command "c" {
  run = ["ls", datasett.fashion.path] # ERROR: Reference to unknown name
}
