datset "fashion" { # ERROR: Unsupported block type
  format = "idx"
}
