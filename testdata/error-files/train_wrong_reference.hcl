dataset "d" {
  format = "generated"
  generator {
    task  = "shape"
    train = 10
    test  = 10
  }
}
encoder "e" {
  arch = "mlp"
}
adapter "a" {
  task = "classification"
}
recipe "r" {
  iterations = 10
}
benchmark "b" {
  dataset = dataset.d.path
  id      = "b"
}
train "t" {
  encoder   = recipe.r # ERROR: Invalid reference
  adapter   = adapter.a
  recipe    = encoder.e # ERROR: Invalid reference
  benchmark = benchmark.b
}
