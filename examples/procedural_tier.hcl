# A CPU demo of the engine on procedural stand-ins (not the real GATE
# benchmarks: examples/tier_small.hcl runs those): three encoders of
# different architectures (a convnet, a ResNet with batch norm, a ViT) trained from
# scratch on real Fashion-MNIST and on seeded procedural benchmarks of the
# other GATE task families, collected into one performance matrix, a
# results table and a report.
#
#   gatepipe apply examples/procedural_tier.hcl # cached after the first run (README lists measured times)
#
# Eight benchmarks over eight task types, as GATE's small tier has eight:
# classification (Fashion-MNIST), regression, multi-label, segmentation,
# video, relational reasoning, image-text retrieval and few-shot episodes
# on held-out classes. Sizes are chosen for a CPU: 24x24 scenes, 250 steps
# of 32 examples (few-shot: 5-way 5-shot episodes).

variable "iterations" {
  type    = number
  default = 250
}

module "fashion" {
  source       = "stdlib/datasets/fashion_mnist"
  val_fraction = 0.03 # 1,800 validation images
}

# Procedural benchmarks: 24x24 RGB scenes of coloured shapes (clips of 3
# frames for video), rendered from a seed (training and test sets from
# independent streams).
locals {
  generated = {
    count     = { task = "count", category = "Video Reg" }            # iWildCam-like counting
    colours   = { task = "colours", category = "Medical Class" }      # multi-label presence
    segment   = { task = "segment", category = "Img Seg" }            # a shape class per pixel
    motion    = { task = "video", category = "Video Class" }          # direction of a moving object
    questions = { task = "relational", category = "Img Relational" }  # CLEVR-style questions
    captions  = { task = "captions", category = "Img to Txt ZS" }     # image-caption retrieval
    fewshot   = { task = "fewshot", category = "Few-Shot Img Class" } # 8 classes held out of training
  }
  heads = {
    count     = "regression"
    colours   = "multilabel"
    segment   = "segmentation"
    motion    = "video"
    questions = "relational"
    captions  = "retrieval"
    fewshot   = "fewshot"
  }
}

dataset "generated" {
  for_each = local.generated
  format   = "generated"
  generator {
    task   = each.value.task
    train  = 4000
    test   = 1000
    size   = 24
    frames = 3
    seed   = 1
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
  patch     = 4 # divides 28 (Fashion-MNIST) and 24
  dim       = 48
  depth     = 2
  heads     = 4
  mlp_ratio = 2
}

adapter "head" {
  for_each = toset(["classification", "regression", "multilabel", "segmentation", "video", "relational", "retrieval", "fewshot"])
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
  validate_every = 125
  top_k          = 2
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
