# Built-in training on real Fashion-MNIST (Debian's dataset-fashion-mnist):
# the convnet conv(1->32,3x3)-relu-maxpool-conv(32->64,3x3)-relu-maxpool-
# fc(3136->128)-relu with a linear classification head, trained with AdamW
# and a plateau scheduler, top-3 validated checkpoints ensembled at test.
#
#   gatepipe apply examples/train_fashion

variable "iterations" {
  type    = number
  default = 1200
}

module "fashion" {
  source = "stdlib/datasets/fashion_mnist"
}

encoder "convnet" {
  arch     = "convnet"
  channels = [32, 64]
  hidden   = [128]
}

encoder "mlp" {
  arch   = "mlp"
  hidden = [256]
}

adapter "cls" {
  task = "classification"
}

recipe "adamw" {
  lr             = 1e-3
  weight_decay   = 0.01
  batch_size     = 128
  iterations     = var.iterations
  validate_every = 200
  top_k          = 3
  seed           = 0
}

benchmark "fashion" {
  dataset  = module.fashion.dataset.path
  id       = "fashion-mnist"
  category = "Img Class"
}

train "fashion" {
  for_each  = toset(["convnet", "mlp"])
  encoder   = { convnet = encoder.convnet, mlp = encoder.mlp }[each.key]
  adapter   = adapter.cls
  recipe    = recipe.adamw
  benchmark = benchmark.fashion
}

results "fashion" {
  metrics = [for k, t in train.fashion : t.metrics]
}

output "test_acc1" {
  value = { for k, t in train.fashion : k => t.acc1 }
}

output "matrix" {
  value = results.fashion.matrix
}

# Results table, training curves, throughput and energy for the run.
report "training" {
  matrix    = results.fashion.matrix
  runs      = [for k, t in train.fashion : t.out_dir]
  reference = "fashion-mnist"
  title     = "Fashion-MNIST training"
}

output "report" {
  value = report.training.html
}
