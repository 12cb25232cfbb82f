command "c" {
  run = ["echo", file("/dev/zero")] # ERROR: Error in function call
}
