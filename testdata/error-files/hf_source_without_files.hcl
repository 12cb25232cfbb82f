dataset "d" {
  source { # ERROR: Invalid dataset source
    hf = "GATE-engine/mini_imagenet"
  }
  format = "raw"
}
