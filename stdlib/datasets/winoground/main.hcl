# Winoground — GATE benchmark "winoground" (Img-Text; metric Text-Image R@1).
# Citation: Thrush et al., Winoground, CVPR 2022.
# Licence: Winoground licence (research; gated on the Hub: accept its terms
# on the dataset's page, then set HF_TOKEN).
# Status: runnable (gated: HF_TOKEN).
# Source: the Hugging Face dataset facebook/winoground (where GATE's code
# loads it), its Parquet shard of the 400 items, pinned to a commit in
# gatepipe.lock.hcl with the Hub's SHA-256. The shard pattern follows the
# Hub's data/<split>-NNNNN-of-NNNNN.parquet convention; it is not checked
# against the live Hub here (no network): `gatepipe fetch` names a pattern
# that matches nothing.
# Task: image-text retrieval. Each item has two images and two captions
# that use the same words in another order (image_0 goes with caption_0).
# The item's two pairs are consecutive examples of one split, and test
# metrics score each item on its own 2 x 2 similarities: Img2Txt and
# Txt2Img (GATE's matrix names; the share of images or captions whose own
# partner scores strictly higher), their losses, and Winoground's Text,
# Image and Group scores. GATE's own metric code reshapes the batch's
# similarity matrix into 2 x 2 blocks that are not the items' blocks
# (defect D4): under GATE's adapters with protocol "table3" (the tiers'
# default) Img2Txt and Txt2Img are computed so, to compare with Table 3,
# and each item's own are kept as "(per item)"; under "gate" and the
# compact heads the items are scored as the Winoground paper does.
# Splits: GATE splits the 400 items 80% / 5% / 15% with unseeded
# train_test_split calls; gatepipe draws the same proportions (320 / 20 /
# 60 items) with split_seed. max_* count items, not pairs.

variable "enabled" {
  description = "false declares the benchmark without planning its download (a tier module that is only listed)."
  default     = true
}

variable "revision" {
  description = "Hub revision (branch, tag or commit) of facebook/winoground."
  default     = "main"
}

variable "image_size" {
  description = "Images are resized to [H, W]."
  default     = [224, 224]
}

variable "split_seed" {
  description = "Seed of the splits gatepipe draws (validation from train when the source has none)."
  default     = 0
}

variable "max_train" {
  description = "Keep at most this many training items, each two image-caption pairs (0 keeps all): a CPU-sized run."
  default     = 0
}

variable "max_val" {
  description = "Keep at most this many validation items, a seeded subset (0 keeps all)."
  default     = 0
}

variable "max_test" {
  description = "Keep at most this many test items, a seeded subset (0 keeps all)."
  default     = 0
}

variable "max_tokens" {
  description = "Captions are cut or padded to this many word tokens."
  default     = 32
}

dataset "data" {
  count = var.enabled ? 1 : 0
  source {
    hf          = "facebook/winoground"
    revision    = var.revision
    files       = ["data/test-*.parquet"]
    credentials = "hf"
  }
  format          = "parquet"
  train           = ["data/test-*.parquet"]
  image_columns   = ["image_0", "image_1"]
  caption_columns = ["caption_0", "caption_1"]
  val_fraction    = 0.05
  test_fraction   = 0.15
  max_tokens      = var.max_tokens
  image_size      = var.image_size
  split_seed      = var.split_seed
  max_train       = var.max_train > 0 ? var.max_train : null
  max_val         = var.max_val > 0 ? var.max_val : null
  max_test        = var.max_test > 0 ? var.max_test : null
  metric_names = {
    "Img2Txt Acc@1" = "Img2Txt"
    "Txt2Img Acc@1" = "Txt2Img"
  }
}

output "dataset" {
  description = "The dataset block's value (null when enabled = false)."
  value       = try(dataset.data[0], null)
}

output "info" {
  description = "What reports repeat about this benchmark."
  value = {
    id       = "winoground"
    name     = "Winoground"
    family   = "Img-Text"
    metric   = "Text-Image R@1"
    licence  = "Winoground licence (research; gated on the Hub)"
    citation = "Thrush et al., Winoground, CVPR 2022"
  }
}
