# External trainers: gatepipe runs your training program once per
# experiment with the experiment's config in experiment.json (dataset paths
# from the cache, benchmark, recipe, output directory, assigned devices),
# streams its log.jsonl as progress, and collects its metrics.json into the
# same results matrix built-in training feeds.
#
#   gatepipe apply examples/external_trainer
#   gatepipe apply -var 'trainers=["centroid","torch_mlp"]' -var python=/usr/bin/python3 examples/external_trainer
#
# trainer.py needs only python3; trainer_torch.py needs PyTorch.

variable "trainers" {
  description = "Which trainers to run: centroid (stdlib only) and/or torch_mlp (PyTorch)."
  type        = list(string)
  default     = ["centroid"]
}

variable "python" {
  description = "Python interpreter (one with PyTorch for torch_mlp)."
  default     = "python3"
}

module "fashion" {
  source    = "stdlib/datasets/fashion_mnist"
  max_train = 3000
}

locals {
  scripts = {
    centroid  = "trainer.py"
    torch_mlp = "trainer_torch.py"
  }
}

command "train" {
  for_each = toset(var.trainers)
  run      = [var.python, local.scripts[each.key]]
  inputs   = [local.scripts[each.key], "gatepipe_trainer.py"]
  experiment = {
    model     = each.key
    benchmark = "fashion-mnist"
    category  = "Img Class"
    dataset   = module.fashion.dataset.path
    max_train = 3000
    max_test  = 1000
    seed      = 0
  }
  resources {
    cpus = 1
  }
}

results "fashion" {
  metrics = [for name, c in command.train : c.metrics]
}

output "matrix" {
  description = "The performance matrix (long CSV) the trainers' metrics fed."
  value       = results.fashion.matrix
}
