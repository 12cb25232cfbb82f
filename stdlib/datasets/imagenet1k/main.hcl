# ImageNet-1k — GATE benchmark "imagenet1k" (Img Class; metric Acc@1).
# Citation: Russakovsky et al., ImageNet Large Scale Visual Recognition Challenge, IJCV 2015.
# Licence: ImageNet terms of access (non-commercial research; accept them on the Hub page).
# Status: runnable (gated: HF_TOKEN).
# Source: the Hugging Face dataset ILSVRC/imagenet-1k (where GATE's code loads it),
# Parquet shards pinned to a commit in gatepipe.lock.hcl with the Hub's
# published SHA-256. Shard patterns follow the Hub's data/<split>-NNNNN-of-
# NNNNN.parquet convention; they are not checked against the live Hub here
# (no network): `gatepipe fetch` names a pattern that matches nothing.
# Splits: the Hub's test shards have no labels (-1), so they are not
# downloaded: the published validation set (50,000) is the test split and
# validation is a seeded 1% of train (12,812 images).

variable "enabled" {
  description = "false declares the benchmark without planning its download (a tier module that is only listed)."
  default     = true
}

variable "revision" {
  description = "Hub revision (branch, tag or commit) of ILSVRC/imagenet-1k."
  default     = "main"
}

variable "image_size" {
  description = "Images are resized to [H, W]."
  default     = [224, 224]
}

variable "store" {
  description = "How the store keeps the images: \"jpeg\" (quality 90, about a sixth of raw's bytes on photographs, decoded as they are read) or \"raw\"."
  default     = "jpeg"
}

variable "split_seed" {
  description = "Seed of the splits gatepipe draws (validation from train when the source has none)."
  default     = 0
}

variable "max_train" {
  description = "Keep at most this many training examples (0 keeps all): a CPU-sized run."
  default     = 0
}

variable "max_val" {
  description = "Keep at most this many validation examples, a seeded subset (0 keeps all)."
  default     = 0
}

variable "max_test" {
  description = "Keep at most this many test examples, a seeded subset (0 keeps all)."
  default     = 0
}

dataset "data" {
  count = var.enabled ? 1 : 0
  source {
    hf          = "ILSVRC/imagenet-1k"
    revision    = var.revision
    files       = ["data/train-*.parquet", "data/validation-*.parquet"]
    credentials = "hf"
  }
  format       = "parquet"
  train        = ["data/train-*.parquet"]
  val_fraction = 0.01
  test         = ["data/validation-*.parquet"]
  examples     = { train = 1281167, test = 50000 } # published: plan's store size
  image_size   = var.image_size
  store        = var.store
  split_seed   = var.split_seed
  max_train    = var.max_train > 0 ? var.max_train : null
  max_val      = var.max_val > 0 ? var.max_val : null
  max_test     = var.max_test > 0 ? var.max_test : null
}

output "dataset" {
  description = "The dataset block's value (null when enabled = false)."
  value       = try(dataset.data[0], null)
}

output "info" {
  description = "What reports repeat about this benchmark."
  value = {
    id       = "imagenet1k"
    name     = "ImageNet-1k"
    family   = "Img Class"
    metric   = "Acc@1"
    licence  = "ImageNet terms of access (non-commercial research; accept them on the Hub page)"
    citation = "Russakovsky et al., ImageNet Large Scale Visual Recognition Challenge, IJCV 2015"
  }
}
