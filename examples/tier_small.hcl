# A small tier that runs on a 2-core CPU: three encoders of different
# architectures (a convnet, a ResNet with batch norm, a ViT) trained from
# scratch on real Fashion-MNIST and on seeded procedural benchmarks of the
# other GATE task families (regression, multi-label, segmentation, video,
# relational reasoning), collected into one performance matrix, a results
# table and a report.
#
#   gatepipe apply examples/tier_small.hcl      # about 12 minutes on 2 cores
#
# Work in progress (issue: training): GATE's small tier has 8 benchmarks;
# this one has 7 over 6 task types (image-text retrieval and few-shot
# episodes have no head yet).

variable "iterations" {
  type    = number
  default = 300
}

module "fashion" {
  source = "stdlib/datasets/fashion_mnist"
}

# Procedural benchmarks: 32x32 RGB scenes of coloured shapes, rendered from
# a seed (training and test sets from independent streams).
locals {
  generated = {
    shapes    = { task = "shape", category = "Img Class" }           # 12 classes: colour x shape
    count     = { task = "count", category = "Video Reg" }           # iWildCam-like counting
    colours   = { task = "colours", category = "Medical Class" }     # multi-label presence
    segment   = { task = "segment", category = "Img Seg" }           # a shape class per pixel
    motion    = { task = "video", category = "Video Class" }         # direction of a moving object
    questions = { task = "relational", category = "Img Relational" } # CLEVR-style questions
  }
  heads = {
    shapes    = "classification"
    count     = "regression"
    colours   = "multilabel"
    segment   = "segmentation"
    motion    = "video"
    questions = "relational"
  }
}

dataset "generated" {
  for_each = local.generated
  format   = "generated"
  generator {
    task  = each.value.task
    train = 4000
    test  = 1000
    size  = 32
    seed  = 1
  }
  val_fraction = 0.1
}

encoder "convnet" {
  arch     = "convnet"
  channels = [16, 32]
  hidden   = [64]
}

encoder "resnet" {
  arch     = "resnet"
  channels = [8, 16]
  blocks   = [1, 1]
}

encoder "vit" {
  arch      = "vit"
  patch     = 4 # divides 28 (Fashion-MNIST) and 32
  dim       = 48
  depth     = 2
  heads     = 4
  mlp_ratio = 2
}

adapter "head" {
  for_each = toset(["classification", "regression", "multilabel", "segmentation", "video", "relational"])
  task     = each.key
  layers   = 2 # the video and relational heads' transformer
  dim      = 32
  heads    = 4
}

# From-scratch training: one learning rate for the three families (the
# paper's per-family rates are for fine-tuning pretrained encoders).
recipe "small" {
  lr             = 1e-3
  weight_decay   = 0.01
  batch_size     = 32
  iterations     = var.iterations
  validate_every = 100
  top_k          = 3
  seed           = 0
}

benchmark "fashion" {
  dataset  = module.fashion.dataset.path
  id       = "fashion-mnist"
  category = "Img Class"
}

benchmark "generated" {
  for_each = local.generated
  dataset  = dataset.generated[each.key].path
  id       = each.key
  category = each.value.category
}

locals {
  encoders   = { convnet = encoder.convnet, resnet = encoder.resnet, vit = encoder.vit }
  benchmarks = merge({ fashion = benchmark.fashion }, benchmark.generated)
  tasks      = merge({ fashion = "classification" }, local.heads)
}

train "small" {
  for_each = {
    for pair in setproduct(keys(local.encoders), keys(local.benchmarks)) : "${pair[0]}/${pair[1]}" => pair
  }
  encoder   = local.encoders[each.value[0]]
  adapter   = adapter.head[local.tasks[each.value[1]]]
  recipe    = recipe.small
  benchmark = local.benchmarks[each.value[1]]
  model     = each.value[0]
}

results "small" {
  metrics = [for k, t in train.small : t.metrics]
}

report "small" {
  matrix    = results.small.matrix
  runs      = [for k, t in train.small : t.out_dir]
  reference = "fashion-mnist"
  title     = "gatepipe small tier (CPU)"
}

output "table" {
  value = results.small.table
}

output "matrix" {
  value = results.small.matrix
}

output "report" {
  value = report.small.html
}
