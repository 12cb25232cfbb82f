gatepipe {
  devices = ["cpu:2", "tpu:0"] # ERROR: Invalid device
}
