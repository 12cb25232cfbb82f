gatepipe {
  parallelism = 0 # ERROR: Invalid parallelism
}
