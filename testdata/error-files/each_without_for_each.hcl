command "c" {
  run = ["echo", each.key] # ERROR: Reference to "each" in context without for_each
}
