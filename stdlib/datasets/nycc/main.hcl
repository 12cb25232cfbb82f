# New Yorker Caption Contest — GATE benchmark "nycc" (Img-Text; metric Text-Image R@1).
# Citation: Hessel et al., Do Androids Laugh at Electric Sheep?, ACL 2023.
# Licence: CC BY 4.0 (the dataset card's; the cartoons are The New Yorker's).
# Status: runnable.
# Source: the Hugging Face dataset jmhessel/newyorker_caption_contest, the
# benchmark's own release, its "explanation" config: Parquet shards of
# cartoons with a caption each, pinned to a commit in gatepipe.lock.hcl
# with the Hub's SHA-256. GATE's loader for this benchmark loads
# nlphuji/flickr30k instead (a copy-paste defect), so GATE's published
# NYCC numbers are Flickr30k test-split numbers; gatepipe reads the real
# source. The shard patterns follow the Hub's <config>/<split>-NNNNN-of-
# NNNNN.parquet convention; they are not checked against the live Hub here
# (no network): `gatepipe fetch` names a pattern that matches nothing.
# Task: image-text retrieval between cartoons and their captions
# (caption_choices holds the caption in this config), scored over the
# whole split as Flickr30k is. A cartoon captioned several times appears
# once per caption, so retrieving its other caption counts as a miss, as
# in GATE's in-batch metric.
# Splits: the config's own train / validation / test (2,340 / 130 / 131
# rows), so no seed is involved.

variable "enabled" {
  description = "false declares the benchmark without planning its download (a tier module that is only listed)."
  default     = true
}

variable "revision" {
  description = "Hub revision (branch, tag or commit) of jmhessel/newyorker_caption_contest."
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

variable "max_tokens" {
  description = "Captions are cut or padded to this many word tokens."
  default     = 32
}

dataset "data" {
  count = var.enabled ? 1 : 0
  source {
    hf       = "jmhessel/newyorker_caption_contest"
    revision = var.revision
    files    = ["explanation/train-*.parquet", "explanation/validation-*.parquet", "explanation/test-*.parquet"]
  }
  format         = "parquet"
  train          = ["explanation/train-*.parquet"]
  val            = ["explanation/validation-*.parquet"]
  test           = ["explanation/test-*.parquet"]
  caption_column = "caption_choices"
  max_tokens     = var.max_tokens
  image_size     = var.image_size
  split_seed     = var.split_seed
  max_train      = var.max_train > 0 ? var.max_train : null
  max_val        = var.max_val > 0 ? var.max_val : null
  max_test       = var.max_test > 0 ? var.max_test : null
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
    id       = "nycc"
    name     = "New Yorker Caption Contest"
    family   = "Img-Text"
    metric   = "Text-Image R@1"
    licence  = "CC BY 4.0 (dataset card); cartoons: The New Yorker"
    citation = "Hessel et al., Do Androids Laugh at Electric Sheep?, ACL 2023"
  }
}
