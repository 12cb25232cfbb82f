# CLEVR-Math — GATE benchmark "clevr-math" (VQA; metric Acc@1).
# Citation: Lindström & Abraham, CLEVR-Math, 2022.
# Licence: CC BY 4.0.
# Status: runnable.
# Source: the Hugging Face dataset dali-does/clevr-math (where GATE's code
# loads it, through a loading script that datasets 4.0 removed), read from
# the Hub's Parquet conversion of its "general" configuration (revision
# refs/convert/parquet: general/<split>/NNNN.parquet, or
# general/partial-<split>/ when the Hub converted only part of a large
# split), pinned to a commit with the Hub's SHA-256. Columns: template, id,
# question, image (CLEVR's 480x320 render), label (the numeric answer). The
# conversion's layout is not checked against the live Hub here (no
# network): `gatepipe fetch` names a pattern that matches nothing.
# Task: the answer as a class from the image and the question's word
# tokens (the relational head). Splits: the source's train, validation
# and test splits, so no seed is involved.

variable "enabled" {
  description = "false declares the benchmark without planning its download (a tier module that is only listed)."
  default     = true
}

variable "revision" {
  description = "Hub revision (branch, tag or commit) of dali-does/clevr-math."
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
    hf       = "dali-does/clevr-math"
    revision = var.revision
    files    = ["general/*train/*.parquet", "general/*validation/*.parquet", "general/*test/*.parquet"]
  }
  format          = "parquet"
  train           = ["general/*train/*.parquet"]
  val             = ["general/*validation/*.parquet"]
  test            = ["general/*test/*.parquet"]
  question_column = "question"
  label_column    = "label"
  image_size      = var.image_size
  split_seed      = var.split_seed
  max_train       = var.max_train > 0 ? var.max_train : null
  max_val         = var.max_val > 0 ? var.max_val : null
  max_test        = var.max_test > 0 ? var.max_test : null
}

output "dataset" {
  description = "The dataset block's value (null when enabled = false)."
  value       = try(dataset.data[0], null)
}

output "info" {
  description = "What reports repeat about this benchmark."
  value = {
    id       = "clevr-math"
    name     = "CLEVR-Math"
    family   = "VQA"
    metric   = "Acc@1"
    licence  = "CC BY 4.0"
    citation = "Lindström & Abraham, CLEVR-Math, 2022"
  }
}
