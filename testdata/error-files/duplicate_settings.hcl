gatepipe {
  parallelism = 2
}
gatepipe { # ERROR: Duplicate gatepipe block
  parallelism = 4
}
