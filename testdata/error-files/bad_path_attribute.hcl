command "c" {
  run = ["ls", path.modul] # ERROR: Invalid "path" attribute
}
