command "c" {
  run = ["true"]
}
command "c" { # ERROR: Duplicate command block
  run = ["false"]
}
