# One stdlib dataset module per benchmark gatepipe can read, each enabled
# only when the tier runs its benchmark (local.run), at the scale's sizes.

module "imagenet1k" {
  source     = "stdlib/datasets/imagenet1k"
  enabled    = contains(local.run, "imagenet1k")
  image_size = local.image_size["imagenet1k"]
  max_train  = local.s.max_train
  max_val    = local.s.max_val
  max_test   = local.s.max_test
  split_seed = var.split_seed
}

module "food101" {
  source     = "stdlib/datasets/food101"
  enabled    = contains(local.run, "food101")
  image_size = local.image_size["food101"]
  max_train  = local.s.max_train
  max_val    = local.s.max_val
  max_test   = local.s.max_test
  split_seed = var.split_seed
}

module "happywhale" {
  source     = "stdlib/datasets/happywhale"
  enabled    = contains(local.run, "happywhale")
  image_size = local.image_size["happywhale"]
  max_train  = local.s.max_train
  max_val    = local.s.max_val
  max_test   = local.s.max_test
  split_seed = var.split_seed
}

module "cifar100" {
  source     = "stdlib/datasets/cifar100"
  enabled    = contains(local.run, "cifar100")
  image_size = local.image_size["cifar100"]
  max_train  = local.s.max_train
  max_val    = local.s.max_val
  max_test   = local.s.max_test
  split_seed = var.split_seed
}

module "places365" {
  source     = "stdlib/datasets/places365"
  enabled    = contains(local.run, "places365")
  image_size = local.image_size["places365"]
  max_train  = local.s.max_train
  max_val    = local.s.max_val
  max_test   = local.s.max_test
  split_seed = var.split_seed
}

module "aircraft" {
  source     = "stdlib/datasets/aircraft"
  enabled    = contains(local.run, "aircraft")
  image_size = local.image_size["aircraft"]
  max_train  = local.s.max_train
  max_val    = local.s.max_val
  max_test   = local.s.max_test
  split_seed = var.split_seed
}

module "cubirds" {
  source     = "stdlib/datasets/cubirds"
  enabled    = contains(local.run, "cubirds")
  image_size = local.image_size["cubirds"]
  max_train  = local.s.max_train
  max_val    = local.s.max_val
  max_test   = local.s.max_test
  split_seed = var.split_seed
}

module "dtextures" {
  source     = "stdlib/datasets/dtextures"
  enabled    = contains(local.run, "dtextures")
  image_size = local.image_size["dtextures"]
  max_train  = local.s.max_train
  max_val    = local.s.max_val
  max_test   = local.s.max_test
  split_seed = var.split_seed
}

module "fungi" {
  source     = "stdlib/datasets/fungi"
  enabled    = contains(local.run, "fungi")
  image_size = local.image_size["fungi"]
  max_train  = local.s.max_train
  max_val    = local.s.max_val
  max_test   = local.s.max_test
  split_seed = var.split_seed
}

module "mini" {
  source     = "stdlib/datasets/mini"
  enabled    = contains(local.run, "mini")
  image_size = local.image_size["mini"]
  max_train  = local.s.max_train
  max_val    = local.s.max_val
  max_test   = local.s.max_test
  split_seed = var.split_seed
}

module "omniglot" {
  source     = "stdlib/datasets/omniglot"
  enabled    = contains(local.run, "omniglot")
  image_size = local.image_size["omniglot"]
  max_train  = local.s.max_train
  max_val    = local.s.max_val
  max_test   = local.s.max_test
  split_seed = var.split_seed
}

module "vgg" {
  source     = "stdlib/datasets/vgg"
  enabled    = contains(local.run, "vgg")
  image_size = local.image_size["vgg"]
  max_train  = local.s.max_train
  max_val    = local.s.max_val
  max_test   = local.s.max_test
  split_seed = var.split_seed
}

module "ade20k" {
  source     = "stdlib/datasets/ade20k"
  enabled    = contains(local.run, "ade20k")
  image_size = local.image_size["ade20k"]
  max_train  = local.s.max_train
  max_val    = local.s.max_val
  max_test   = local.s.max_test
  split_seed = var.split_seed
}

module "cityscapes" {
  source     = "stdlib/datasets/cityscapes"
  enabled    = contains(local.run, "cityscapes")
  image_size = local.image_size["cityscapes"]
  max_train  = local.s.max_train
  max_val    = local.s.max_val
  max_test   = local.s.max_test
  split_seed = var.split_seed
}

module "coco_10k" {
  source     = "stdlib/datasets/coco_10k"
  enabled    = contains(local.run, "coco-10k")
  image_size = local.image_size["coco-10k"]
  max_train  = local.s.max_train
  max_val    = local.s.max_val
  max_test   = local.s.max_test
  split_seed = var.split_seed
}

module "coco_164k" {
  source     = "stdlib/datasets/coco_164k"
  enabled    = contains(local.run, "coco-164k")
  image_size = local.image_size["coco-164k"]
  max_train  = local.s.max_train
  max_val    = local.s.max_val
  max_test   = local.s.max_test
  split_seed = var.split_seed
}

module "acdc" {
  source     = "stdlib/datasets/acdc"
  enabled    = contains(local.run, "acdc")
  image_size = local.image_size["acdc"]
  max_train  = local.s.max_train
  max_val    = local.s.max_val
  max_test   = local.s.max_test
  split_seed = var.split_seed
}

module "ham10k" {
  source     = "stdlib/datasets/ham10k"
  enabled    = contains(local.run, "ham10k")
  image_size = local.image_size["ham10k"]
  max_train  = local.s.max_train
  max_val    = local.s.max_val
  max_test   = local.s.max_test
  split_seed = var.split_seed
}

module "diabetic" {
  source     = "stdlib/datasets/diabetic"
  enabled    = contains(local.run, "diabetic")
  image_size = local.image_size["diabetic"]
  max_train  = local.s.max_train
  max_val    = local.s.max_val
  max_test   = local.s.max_test
  split_seed = var.split_seed
}

module "chexpert" {
  source     = "stdlib/datasets/chexpert"
  enabled    = contains(local.run, "chexpert")
  image_size = local.image_size["chexpert"]
  # D5: Table 3's five NIH findings, or under protocol "gate" the five GATE names.
  labels     = local.adapters == "gate" ? "gate" : "table3"
  max_train  = local.s.max_train
  max_val    = local.s.max_val
  max_test   = local.s.max_test
  split_seed = var.split_seed
}

module "flickr30k" {
  source     = "stdlib/datasets/flickr30k"
  enabled    = contains(local.run, "flickr30k")
  image_size = local.image_size["flickr30k"]
  # GATE's loader: every image, 70 / 15 / 15 at random.
  split_fractions = local.gate ? [0.15, 0.15] : null
  max_train  = local.s.max_train
  max_val    = local.s.max_val
  max_test   = local.s.max_test
  split_seed = var.split_seed
}

# D3: GATE's NYCC loader reads Flickr30k (80 / 5 / 15 at random); under
# protocol table3 the tier's nycc is that, under any other its own data.
module "nycc_table3" {
  source          = "stdlib/datasets/flickr30k"
  enabled         = contains(local.run, "nycc") && local.adapters == "table3"
  image_size      = local.image_size["nycc"]
  split_fractions = [0.05, 0.15]
  max_train       = local.s.max_train
  max_val         = local.s.max_val
  max_test        = local.s.max_test
  split_seed      = var.split_seed
}

module "nycc" {
  source     = "stdlib/datasets/nycc"
  enabled    = contains(local.run, "nycc") && local.adapters != "table3"
  image_size = local.image_size["nycc"]
  max_train  = local.s.max_train
  max_val    = local.s.max_val
  max_test   = local.s.max_test
  split_seed = var.split_seed
}

module "winoground" {
  source     = "stdlib/datasets/winoground"
  enabled    = contains(local.run, "winoground")
  image_size = local.image_size["winoground"]
  max_train  = local.s.max_train
  max_val    = local.s.max_val
  max_test   = local.s.max_test
  split_seed = var.split_seed
}

module "kinetics" {
  source     = "stdlib/datasets/kinetics"
  enabled    = contains(local.run, "kinetics")
  image_size = local.image_size["kinetics"]
  max_train  = local.s.max_train
  max_val    = local.s.max_val
  max_test   = local.s.max_test
  split_seed = var.split_seed
  # A capped run downloads a part (~1,000 clips, 1.8 GB) per 1,000
  # examples it keeps, not all 301 (~450 GB), and no replacements.
  train_parts  = local.s.max_train > 0 ? min(242, ceil(local.s.max_train / 1000)) : 242
  val_parts    = local.s.max_val > 0 ? min(20, ceil(local.s.max_val / 1000)) : 20
  test_parts   = local.s.max_test > 0 ? min(39, ceil(local.s.max_test / 1000)) : 39
  replacements = local.s.max_train == 0
}

module "nyu" {
  source     = "stdlib/datasets/nyu"
  enabled    = contains(local.run, "nyu")
  image_size = local.image_size["nyu"]
  max_train  = local.s.max_train
  max_val    = local.s.max_val
  max_test   = local.s.max_test
  split_seed = var.split_seed
  # A capped run downloads a train shard (~4,000 frames, 2.7 GB) per
  # 4,000 examples it keeps, not all 12.
  train_shards = local.s.max_train > 0 ? min(12, ceil(local.s.max_train / 4000)) : 12
}

module "pascal" {
  source     = "stdlib/datasets/pascal"
  enabled    = contains(local.run, "pascal")
  image_size = local.image_size["pascal"]
  max_train  = local.s.max_train
  max_val    = local.s.max_val
  max_test   = local.s.max_test
  split_seed = var.split_seed
}

module "hmdb51" {
  source     = "stdlib/datasets/hmdb51"
  enabled    = contains(local.run, "hmdb51")
  image_size = local.image_size["hmdb51"]
  max_train  = local.s.max_train
  max_val    = local.s.max_val
  max_test   = local.s.max_test
  split_seed = var.split_seed
}

module "ucf" {
  source     = "stdlib/datasets/ucf"
  enabled    = contains(local.run, "ucf")
  image_size = local.image_size["ucf"]
  max_train  = local.s.max_train
  max_val    = local.s.max_val
  max_test   = local.s.max_test
  split_seed = var.split_seed
}

module "iwildcam" {
  source     = "stdlib/datasets/iwildcam"
  enabled    = contains(local.run, "iwildcam")
  image_size = local.image_size["iwildcam"]
  max_train  = local.s.max_train
  max_val    = local.s.max_val
  max_test   = local.s.max_test
  split_seed = var.split_seed
}

module "clevr" {
  source     = "stdlib/datasets/clevr"
  enabled    = contains(local.run, "clevr")
  image_size = local.image_size["clevr"]
  max_train  = local.s.max_train
  max_val    = local.s.max_val
  max_test   = local.s.max_test
  split_seed = var.split_seed
}

module "clevr_math" {
  source     = "stdlib/datasets/clevr_math"
  enabled    = contains(local.run, "clevr-math")
  image_size = local.image_size["clevr-math"]
  max_train  = local.s.max_train
  max_val    = local.s.max_val
  max_test   = local.s.max_test
  split_seed = var.split_seed
}
