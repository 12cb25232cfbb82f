command "c" {
  for_each = toset(["a"])
  count    = 2 # ERROR: Conflicting for_each and count
  run      = ["true"]
}
