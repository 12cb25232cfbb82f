# ADE20K (SceneParse150) — GATE benchmark "ade20k" (Img Seg; metric mIoU).
# Citation: Zhou et al., Scene Parsing through ADE20K Dataset, CVPR 2017.
# Licence: BSD-3-Clause (annotations); images from SUN/Places.
# Status: runnable.
# Source: the Hugging Face dataset zhoubolei/scene_parse_150 (where GATE's code loads it),
# Parquet shards pinned to a commit in gatepipe.lock.hcl with the Hub's
# published SHA-256. Shard patterns follow the Hub's data/<split>-NNNNN-of-
# NNNNN.parquet convention; they are not checked against the live Hub here
# (no network): `gatepipe fetch` names a pattern that matches nothing.
# Splits: the Hub's Parquet conversion (revision refs/convert/parquet,
# scene_parsing/<split>/NNNN.parquet); validation is a seeded 10% of train,
# test the source's validation split (its test split has no labels).

variable "enabled" {
  description = "false declares the benchmark without planning its download (a tier module that is only listed)."
  default     = true
}

variable "revision" {
  description = "Hub revision (branch, tag or commit) of zhoubolei/scene_parse_150."
  default     = "refs/convert/parquet"
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
    hf       = "zhoubolei/scene_parse_150"
    revision = var.revision
    files    = ["scene_parsing/train/*.parquet", "scene_parsing/validation/*.parquet"]
  }
  format       = "parquet"
  train        = ["scene_parsing/train/*.parquet"]
  examples     = { train = 20210, test = 2000 } # published: plan's store size
  val_fraction = 0.1
  test         = ["scene_parsing/validation/*.parquet"]
  label_column = "annotation"
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
    id       = "ade20k"
    name     = "ADE20K (SceneParse150)"
    family   = "Img Seg"
    metric   = "mIoU"
    licence  = "BSD-3-Clause (annotations); images from SUN/Places"
    citation = "Zhou et al., Scene Parsing through ADE20K Dataset, CVPR 2017"
  }
}
