command "c" {
  for_each = ["a", "b"] # ERROR: Invalid for_each argument
  run      = ["echo", each.value]
}
