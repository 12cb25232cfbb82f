command "c" {
  for_each = { a = "x", b = "y", a = "z" } # ERROR: Duplicate key
  run      = ["echo", each.value]
}
locals {
  m = {
    "k" = 1
    k   = 2 # ERROR: Duplicate key
  }
}
