command "c" {
  run = [formatt("%d", 1)] # ERROR: Call to unknown function
}
