command "c" {
  run = ["true"
} # ERROR: Missing item separator
