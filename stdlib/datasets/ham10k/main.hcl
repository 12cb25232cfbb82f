# HAM10000 — GATE benchmark "ham10k" (Med Class; metric AUC).
# Citation: Tschandl et al., The HAM10000 dataset, Scientific Data 2018.
# Licence: CC BY-NC-SA 4.0.
# Status: runnable (Kaggle credentials: KAGGLE_USERNAME and KAGGLE_KEY, or ~/.kaggle/kaggle.json).
# Source: the Kaggle dataset kmader/skin-cancer-mnist-ham10000 (where GATE's
# code loads it), downloaded through Kaggle's API as one zip; its SHA-256 is
# pinned in gatepipe.lock.hcl on first download. The zip holds the metadata
# CSV and the 10,015 JPEGs in two part directories (plus lower-case copies,
# which are not read).
# Task: the seven diagnoses (dx) as one-hot targets of a multi-label head,
# as GATE scores them: per-class and macro AUC, APS and Brier score.
# Splits: a seeded 70/10/20 train/validation/test split of the images (GATE's
# split is unseeded).

variable "enabled" {
  description = "false declares the benchmark without planning its download (a tier module that is only listed)."
  default     = true
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

variable "version" {
  description = "Kaggle dataset version number (null: the latest; the lock file pins what came either way)."
  default     = null
}

dataset "data" {
  count = var.enabled ? 1 : 0
  source {
    url         = "https://www.kaggle.com/api/v1/datasets/download/kmader/skin-cancer-mnist-ham10000${var.version != null ? "?datasetVersionNumber=${var.version}" : ""}"
    name        = "skin-cancer-mnist-ham10000.zip"
    credentials = "kaggle"
  }
  format        = "image_csv"
  task          = "multilabel"
  annotations   = ["HAM10000_metadata.csv"]
  images        = ["HAM10000_images_part_1", "HAM10000_images_part_2"]
  image_column  = "image_id"
  label_column  = "dx"
  val_fraction  = 0.1
  test_fraction = 0.2
  image_size    = var.image_size
  split_seed    = var.split_seed
  max_train     = var.max_train > 0 ? var.max_train : null
  max_val       = var.max_val > 0 ? var.max_val : null
  max_test      = var.max_test > 0 ? var.max_test : null
}

output "dataset" {
  description = "The dataset block's value (null when enabled = false)."
  value       = try(dataset.data[0], null)
}

output "info" {
  description = "What reports repeat about this benchmark."
  value = {
    id       = "ham10k"
    name     = "HAM10000"
    family   = "Med Class"
    metric   = "AUC"
    licence  = "CC BY-NC-SA 4.0"
    citation = "Tschandl et al., The HAM10000 dataset, Scientific Data 2018"
  }
}
