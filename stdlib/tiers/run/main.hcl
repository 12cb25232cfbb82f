# The engine behind stdlib/tiers/small, base and big: given a tier's
# benchmarks and an encoder block, it evaluates the encoder on every tier
# benchmark gatepipe can read (the stdlib/datasets modules with a reader),
# collects the results matrix, predicts the encoder's results on the whole
# GATE pool and its placement among the paper's 21 encoders with EEVEE, and
# writes the report. The tier modules call it; call it directly for a tier
# of your own:
#
#   module "mine" {
#     source     = "stdlib/tiers/run"
#     benchmarks = ["cifar100", "mini", "acdc"]
#     encoder    = encoder.mine
#     scale      = "cpu"
#   }
#
# Without an encoder nothing is planned (the tier modules are also read
# for their benchmark lists alone).
#
# Its variables are in variables.hcl, the dataset modules in datasets.hcl.

locals {
  # The benchmarks gatepipe can read, with GATE's task adapter and the
  # category the paper's matrix files them under.
  readable = {
    imagenet1k  = { adapter = "classification", category = "Img Class" }
    food101     = { adapter = "classification", category = "Img Class" }
    happywhale  = { adapter = "classification", category = "Img Class" }
    cifar100    = { adapter = "classification", category = "Img Class" }
    places365   = { adapter = "classification", category = "Img Class" }
    aircraft    = { adapter = "fewshot", category = "Few-Shot Img Class" }
    cubirds     = { adapter = "fewshot", category = "Few-Shot Img Class" }
    dtextures   = { adapter = "fewshot", category = "Few-Shot Img Class" }
    fungi       = { adapter = "fewshot", category = "Few-Shot Img Class" }
    mini        = { adapter = "fewshot", category = "Few-Shot Img Class" }
    omniglot    = { adapter = "fewshot", category = "Few-Shot Img Class" }
    vgg         = { adapter = "fewshot", category = "Few-Shot Img Class" }
    ade20k      = { adapter = "segmentation", category = "Img Seg" }
    cityscapes  = { adapter = "segmentation", category = "Img Seg" }
    "coco-10k"  = { adapter = "segmentation", category = "Img Seg" }
    "coco-164k" = { adapter = "segmentation", category = "Img Seg" }
    acdc        = { adapter = "segmentation", category = "Medical Seg" }
    ham10k      = { adapter = "multilabel", category = "Medical Class" }
    diabetic    = { adapter = "multilabel", category = "Medical Class" }
    chexpert    = { adapter = "multilabel", category = "Medical Class" }
    flickr30k   = { adapter = "retrieval", category = "Img to Txt ZS" }
    nycc        = { adapter = "retrieval", category = "Img to Txt ZS" }
    winoground  = { adapter = "retrieval", category = "Img to Txt ZS" }
    clevr-math  = { adapter = "relational", category = "Img Relational" }
    clevr       = { adapter = "relational", category = "Img Relational" }
    iwildcam    = { adapter = "video_regression", category = "Video Reg" }
    hmdb51      = { adapter = "video", category = "Video Class" }
    pascal      = { adapter = "segmentation", category = "Img Seg" }
    nyu         = { adapter = "segmentation", category = "Img Seg" }
    ucf         = { adapter = "video", category = "Video Class" }
    kinetics    = { adapter = "video", category = "Video Class" }
  }

  # The test and smoke scales' sizes.
  tiny = {
    max_train      = 60
    max_val        = 30
    max_test       = 30
    image_size     = [16, 16]
    iterations     = 4
    batch_size     = 8
    validate_every = 2
    top_k          = 1
    ways           = 3
    shots          = 2
    queries        = 2
  }

  scales = {
    full = {
      max_train      = 0
      max_val        = 0
      max_test       = 0
      image_size     = [224, 224]
      iterations     = 10000
      batch_size     = 128
      validate_every = 500
      top_k          = 3
      ways           = 5
      shots          = 5
      queries        = 15
    }
    cpu = {
      max_train      = 2000
      max_val        = 500
      max_test       = 1000
      image_size     = [64, 64]
      iterations     = 300
      batch_size     = 32
      validate_every = 100
      top_k          = 1
      ways           = 5
      shots          = 5
      queries        = 5
    }
    # smoke: the test sizes, on gatepipe's own fixtures of the benchmarks
    # (-mirror smoke; eval -scale smoke sets it): mechanics only.
    smoke = local.tiny
    test  = local.tiny
  }
  s = merge(local.scales.full, try(local.scales[var.scale], var.scale))
  # A capped scale's numbers are no Table 3 numbers: every output says so.
  scale_name = try(tostring(var.scale), "custom")
  capped     = contains(["smoke", "test", "cpu"], local.scale_name)
  caveat     = local.capped ? "${local.scale_name}: mechanics only, not comparable with the paper" : ""

  # GATE's protocol table: its adapters, and at full scale the image
  # size each benchmark ran at (1024 px segmentation, 512 px ACDC).
  protocol = jsondecode(file("../../data/gate_protocol.json"))
  adapters  = coalesce(var.adapters, var.trainer == "builtin" ? "compact" : "table3")
  gate      = local.adapters != "compact"
  gate_full = local.gate && local.scale_name == "full"
  image_size = {
    for b, r in local.readable : b => local.scale_name == "full" && local.gate ? try(local.protocol.benchmarks[b].image_size, local.protocol.adapters[r.adapter].image_size) : local.s.image_size
  }

  on      = var.encoder != null
  run     = local.on ? toset([for b in var.benchmarks : b if contains(keys(local.readable), b)]) : toset([])
  skipped = [for b in var.benchmarks : b if !contains(keys(local.readable), b)]

  # With torch_arch (trainer = "torch" or "auto"), a model PyTorch's
  # libraries build by name trains on every benchmark, on the torch
  # runtime, in place of the encoder: convnet is gatepipe's small CNN,
  # timm:NAME timm's, any other name torchvision's.
  torch_arch = var.trainer != "builtin" && var.torch_arch != null
  library    = local.torch_arch ? (var.torch_arch == "convnet" || length(regexall("^(timm|torchvision):", var.torch_arch)) > 0 ? var.torch_arch : "torchvision:${var.torch_arch}") : null

  data = {
    imagenet1k  = module.imagenet1k.dataset
    food101     = module.food101.dataset
    happywhale  = module.happywhale.dataset
    cifar100    = module.cifar100.dataset
    places365   = module.places365.dataset
    aircraft    = module.aircraft.dataset
    cubirds     = module.cubirds.dataset
    dtextures   = module.dtextures.dataset
    fungi       = module.fungi.dataset
    mini        = module.mini.dataset
    omniglot    = module.omniglot.dataset
    vgg         = module.vgg.dataset
    ade20k      = module.ade20k.dataset
    cityscapes  = module.cityscapes.dataset
    "coco-10k"  = module.coco_10k.dataset
    "coco-164k" = module.coco_164k.dataset
    acdc        = module.acdc.dataset
    ham10k      = module.ham10k.dataset
    diabetic    = module.diabetic.dataset
    chexpert    = module.chexpert.dataset
    flickr30k   = module.flickr30k.dataset
    nycc        = local.adapters == "table3" ? module.nycc_table3.dataset : module.nycc.dataset
    winoground  = module.winoground.dataset
    clevr-math  = module.clevr_math.dataset
    clevr       = module.clevr.dataset
    iwildcam    = module.iwildcam.dataset
    hmdb51      = module.hmdb51.dataset
    pascal      = module.pascal.dataset
    nyu         = module.nyu.dataset
    ucf         = module.ucf.dataset
    kinetics    = module.kinetics.dataset
  }
}

benchmark "b" {
  for_each = local.run
  dataset  = local.data[each.key].path
  id       = each.key
  category = local.readable[each.key].category
}

# GATE's adapters (gate_protocol.json) at the scale's sizes, or
# gatepipe's compact heads.
adapter "head" {
  for_each = local.run
  task     = local.readable[each.key].adapter
  protocol = local.gate ? local.adapters : null
  scale    = contains(keys(local.protocol.scales), local.scale_name) ? local.scale_name : "full"
  ways     = local.s.ways
  shots    = local.s.shots
  queries  = local.s.queries
}

# GATE's recipe shape; the learning rate is the recipe default for the
# encoder's family and the task (the paper's per-family rates).
# At full scale with GATE's adapters: GATE's batch for the task family
# and its validation every 250 steps (the learning rate is the card's
# for the encoder's family: SPEC §5.9); the lr, batch_size and iterations
# variables override.
recipe "r" {
  for_each       = local.on ? local.run : toset([])
  mode           = var.protocol
  lr             = var.lr
  batch_size     = coalesce(var.batch_size, local.gate_full ? try(local.protocol.benchmarks[each.key].batch_size, local.protocol.adapters[local.readable[each.key].adapter].batch_size) : local.s.batch_size)
  iterations     = coalesce(var.iterations, local.s.iterations)
  validate_every = local.gate_full ? local.protocol.recipe.eval_every : local.s.validate_every
  top_k          = local.s.top_k
  seed           = var.seed
  seeds          = var.seeds
}

# The torch_arch model (its weights, in its own names, from the encoder's
# weights attribute), when one is named.
encoder "torch_arch" {
  count   = local.torch_arch ? 1 : 0
  arch    = local.library
  weights = local.library == "convnet" ? "" : var.encoder.weights
}

train "run" {
  for_each  = local.run
  encoder   = local.torch_arch ? encoder.torch_arch[0] : var.encoder
  adapter   = adapter.head[each.key]
  recipe    = recipe.r[each.key]
  benchmark = benchmark.b[each.key]
  model     = var.model
  runtime   = local.torch_arch ? "torch" : (var.trainer == "builtin" ? "go" : var.trainer)
  python    = var.trainer == "builtin" ? null : var.python
  resources {
    cpus = var.cpus
    gpus = var.trainer == "builtin" ? 0 : var.gpus
  }
}

results "tier" {
  count   = local.on ? 1 : 0
  metrics = [for k, t in train.run : t.metrics]
}

# The encoder's results on the whole pool, predicted by EEVEE's meta-model
# from the benchmarks it was measured on, and its placement among the
# paper's 21 encoders. Only higher-is-better columns count: losses' scale
# depends on the training run more than on the encoder, so iWildCam (Video
# Reg: MAE and MSE only) is measured and reported but predicts nothing.
predict "placement" {
  count    = local.on ? 1 : 0
  matrix   = "stdlib/data/gate_table3.csv"
  tier     = sort([for b in local.run : b if local.readable[b].category != "Video Reg"])
  measured = results.tier[0].matrix
  model    = var.model
  columns  = "higher_is_better"
  # At small scales a benchmark may yield some of its metrics only (Acc@5
  # needs five classes): predict without the others, with a warning.
  partial = true
}

# The report leads with the placement and its interval; its header names
# the protocol (the adapters) and the scale, and a capped scale's caveat.
report "tier" {
  count       = local.on ? 1 : 0
  matrix      = "stdlib/data/gate_table3.csv"
  paper       = true
  predictions = [predict.placement[0].path]
  tiers       = { (var.tier_name) = var.benchmarks }
  runs        = [for k, t in train.run : t.out_dir]
  title       = "${var.model} on ${var.tier_name}GATE"
  protocol    = local.adapters
  scale       = local.scale_name
  caveat      = local.capped ? "scale ${local.caveat}" : null
}

output "benchmarks" {
  description = "The tier's benchmarks."
  value       = var.benchmarks
}

output "measured" {
  description = "The benchmarks the encoder was evaluated on."
  value       = sort(tolist(local.run))
}

output "not_run" {
  description = "The tier's benchmarks gatepipe has no reader for yet (see stdlib/datasets/catalog.csv); they are predicted, not measured."
  value       = local.skipped
}

output "table" {
  description = "The results table (Markdown)."
  value       = local.on ? (local.capped ? "> Scale ${local.caveat}.\n\n${results.tier[0].table}" : results.tier[0].table) : null
}

output "position" {
  description = "The predicted placement among the pool's encoders, with its interval under the prediction's spread (SPEC §5.4)."
  value       = local.on ? "${predict.placement[0].position} of ${predict.placement[0].of} (interval ${predict.placement[0].interval[0]}–${predict.placement[0].interval[1]})${local.capped ? " (${local.caveat})" : ""}" : null
}

output "report" {
  description = "The HTML report."
  value       = local.on ? report.tier[0].html : null
}
