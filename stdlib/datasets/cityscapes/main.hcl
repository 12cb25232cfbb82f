# Cityscapes (re-upload) — GATE benchmark "cityscapes" (Img Seg; metric mIoU).
# Citation: Cordts et al., The Cityscapes Dataset, CVPR 2016.
# Licence: Cityscapes licence (non-commercial; registration at cityscapes-dataset.com).
# Status: runnable.
# Source: the Hugging Face dataset Antreas/Cityscapes (where GATE's code loads it),
# Parquet shards pinned to a commit in gatepipe.lock.hcl with the Hub's
# published SHA-256. Shard patterns follow the Hub's data/<split>-NNNNN-of-
# NNNNN.parquet convention; they are not checked against the live Hub here
# (no network): `gatepipe fetch` names a pattern that matches nothing.
# Splits: the source's train/test shards; validation is a seeded val_fraction of train (GATE's split is unseeded).

variable "enabled" {
  description = "false declares the benchmark without planning its download (a tier module that is only listed)."
  default     = true
}

variable "revision" {
  description = "Hub revision (branch, tag or commit) of Antreas/Cityscapes."
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
    hf       = "Antreas/Cityscapes"
    revision = var.revision
    files    = ["data/train-*.parquet", "data/test-*.parquet"]
  }
  format       = "parquet"
  train        = ["data/train-*.parquet"]
  val_fraction = 0.1
  test         = ["data/test-*.parquet"]
  label_column = "semantic_segmentation"
  task         = "segmentation" # the label column holds masks: plan counts them
  image_size   = var.image_size
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
    id       = "cityscapes"
    name     = "Cityscapes (re-upload)"
    family   = "Img Seg"
    metric   = "mIoU"
    licence  = "Cityscapes licence (non-commercial; registration at cityscapes-dataset.com)"
    citation = "Cordts et al., The Cityscapes Dataset, CVPR 2016"
  }
}
