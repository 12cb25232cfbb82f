command "a" { # ERROR: Dependency cycle
  run = ["echo", command.b.log]
}
command "b" {
  run = ["echo", command.a.log]
}
