# Your own PyTorch encoder through every task family gatepipe trains.
#
#   gatepipe apply examples/your_encoder     # torch runtime (CPU torch is enough): 8 s on 2 cores
#
# mymodel.py holds the module (SPEC §5.6, "Your own encoder", gives the
# contract). Edit it and apply again: its hash is in every train node's
# cache key, so they re-run; `gatepipe plan` builds it and runs a fake
# batch first, and says where a mistake in it is.

encoder "mine" {
  arch = "python:mymodel.py:MyNet"
  args = { width = 16, blocks = 2 }
}

# Procedural stand-ins of GATE's task families (24x24 scenes; clips of 3
# frames for video), rendered from a seed.
locals {
  generated = {
    shapes    = { task = "shape", head = "classification", category = "Img Class" }
    colours   = { task = "colours", head = "multilabel", category = "Medical Class" }
    segment   = { task = "segment", head = "segmentation", category = "Img Seg" }
    count     = { task = "count", head = "regression", category = "Video Reg" }
    motion    = { task = "video", head = "video", category = "Video Class" }
    questions = { task = "relational", head = "relational", category = "Img Relational" }
    captions  = { task = "captions", head = "retrieval", category = "Img to Txt ZS" }
    fewshot   = { task = "fewshot", head = "fewshot", category = "Few-Shot Img Class" }
  }
}

dataset "generated" {
  for_each = local.generated
  format   = "generated"
  generator {
    task   = each.value.task
    train  = each.key == "fewshot" ? 2000 : 300 # few-shot holds classes out for validation and test
    test   = 100
    size   = 24
    frames = 3
    seed   = 1
  }
  val_fraction = 0.1
}

benchmark "generated" {
  for_each = local.generated
  dataset  = dataset.generated[each.key].path
  id       = each.key
  category = each.value.category
}

adapter "head" {
  for_each = local.generated
  task     = each.value.head
  layers   = 1
  dim      = 32
  heads    = 4
}

recipe "short" {
  lr             = 1e-3
  batch_size     = 16
  iterations     = 40
  validate_every = 20
}

train "mine" {
  for_each  = local.generated
  encoder   = encoder.mine
  adapter   = adapter.head[each.key]
  recipe    = recipe.short
  benchmark = benchmark.generated[each.key]
  runtime   = "torch"
}

results "mine" {
  metrics = [for k, t in train.mine : t.metrics]
}

output "table" {
  value = results.mine.table
}
