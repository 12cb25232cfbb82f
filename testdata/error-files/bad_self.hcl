command "c" {
  run = ["ls", self.output_dir] # ERROR: Invalid "self" reference
}
