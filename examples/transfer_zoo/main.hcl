# Which encoder transfers best, found the cheap ways, and how well the
# cheap ways tell: a zoo of five encoders of different families and
# sizes, each pretrained by gatepipe on Fashion-MNIST's first five classes
# (the source task), evaluated on the last five (the target task):
#
# - transferability metrics (LogME, LEEP, NCE, N-LEEP, H-score, TransRate,
#   GBC, SFDA) on the target's frozen features, judged by weighted tau
#   against the models' fine-tuned target accuracy, beside the static
#   ranking (by size) and the source-accuracy mean rank (SITE);
# - ELEVATER linear probes with automatic tuning on 5, 20, 50 examples
#   per class and all of them (3 seeds each), and VTAB-1k;
# - Meta-Dataset episodes with prototype, cosine-classifier and linear
#   adapters, with 95% intervals.
#
#   gatepipe apply examples/transfer_zoo        # minutes on 2 cores

variable "source_iterations" {
  type    = number
  default = 300
}

variable "episodes" {
  type    = number
  default = 200
}

module "source" {
  source       = "stdlib/datasets/fashion_mnist"
  keep_classes = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat"]
  max_train    = 6000
  max_val      = 500
  max_test     = 1000
}

module "target" {
  source       = "stdlib/datasets/fashion_mnist"
  keep_classes = ["Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"]
  max_train    = 1500
  max_val      = 300
  max_test     = 1000
}

benchmark "source" {
  dataset = module.source.dataset.path
  id      = "fashion-0-4"
}

benchmark "target" {
  dataset = module.target.dataset.path
  id      = "fashion-5-9"
}

locals {
  # Five families and sizes; the list is also the static ranking (the
  # SITE paper's heuristic: bigger first).
  zoo = {
    cnn_large = { arch = "convnet", channels = [32, 64], hidden = [128] }
    mlp_large = { arch = "mlp", channels = [], hidden = [256, 128] }
    vit       = { arch = "vit", channels = [], hidden = [] }
    mlp_small = { arch = "mlp", channels = [], hidden = [32] }
    cnn_small = { arch = "convnet", channels = [4, 8], hidden = [16] }
  }
  by_size = ["cnn_large", "mlp_large", "vit", "mlp_small", "cnn_small"]
}

encoder "scratch" {
  for_each = local.zoo
  arch     = each.value.arch
  channels = length(each.value.channels) > 0 ? each.value.channels : null
  hidden   = each.value.arch == "vit" ? null : each.value.hidden
  patch    = 7
  dim      = 48
  depth    = 2
  heads    = 4
}

adapter "cls" {}

recipe "source" {
  lr             = 1e-3
  batch_size     = 64
  iterations     = var.source_iterations
  validate_every = 100
  seed           = 0
}

recipe "finetune" {
  lr             = 5e-4
  batch_size     = 64
  iterations     = 150
  validate_every = 50
  seed           = 0
}

# 1. Pretrain each encoder on the source classes.
train "source" {
  for_each  = local.zoo
  encoder   = encoder.scratch[each.key]
  adapter   = adapter.cls
  recipe    = recipe.source
  benchmark = benchmark.source
}

# The pretrained encoders: the source checkpoints, head included.
encoder "pretrained" {
  for_each = local.zoo
  arch     = each.value.arch
  channels = length(each.value.channels) > 0 ? each.value.channels : null
  hidden   = each.value.arch == "vit" ? null : each.value.hidden
  patch    = 7
  dim      = 48
  depth    = 2
  heads    = 4
  weights  = train.source[each.key].checkpoints[0]
}

# 2. The ground truth: each pretrained encoder fine-tuned on the target.
train "finetune" {
  for_each  = local.zoo
  encoder   = encoder.pretrained[each.key]
  adapter   = adapter.cls
  recipe    = recipe.finetune
  benchmark = benchmark.target
}

# 3. Frozen target features, and the source heads' probabilities on the
# target (for LEEP and NCE), computed once and cached.
features "target" {
  for_each  = local.zoo
  encoder   = encoder.pretrained[each.key]
  benchmark = benchmark.target
}

features "source_probabilities" {
  for_each  = local.zoo
  encoder   = encoder.pretrained[each.key]
  benchmark = benchmark.target
  output    = "probabilities"
  classes   = 5
}

transferability "target" {
  target = "Fashion-MNIST 5-9"
  models = {
    for k, v in local.zoo : k => {
      features      = features.target[k]
      probabilities = features.source_probabilities[k]
      accuracy      = train.finetune[k].acc1
    }
  }
  static  = local.by_size
  history = { source = { for k, v in local.zoo : k => train.source[k].acc1 } }
}

probe "target" {
  for_each = local.zoo
  features = features.target[each.key]
  shots    = [5, 20, 50, 0]
  seeds    = [0, 1, 2]
  vtab1k   = true
}

episodes "target" {
  for_each = local.zoo
  features = features.target[each.key]
  source   = "Fashion-MNIST 5-9"
  episodes = var.episodes
}

output "weighted_tau" {
  value = transferability.target.weighted_tau
}

output "finetuned_acc1" {
  value = { for k, t in train.finetune : k => t.acc1 }
}

output "probe_scores" {
  value = { for k, p in probe.target : k => p.scores }
}

output "episode_accuracy" {
  value = { for k, e in episodes.target : k => e.accuracy }
}

report "zoo" {
  title           = "Transfer from Fashion-MNIST 0-4 to 5-9: a zoo of five encoders"
  transferability = [transferability.target.path]
  probes          = [for k, p in probe.target : p.path]
  episodes        = [for k, e in episodes.target : e.path]
  runs            = [for k, t in train.finetune : t.out_dir]
}

output "report" {
  value = report.zoo.html
}
