command "a" {
  run = ["true"]
}
command "b" {
  for_each = toset([command.a.log]) # ERROR: Invalid for_each argument
  run      = ["cat", each.value]
}
