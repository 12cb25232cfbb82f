# Diabetic Retinopathy (resized) — GATE benchmark "diabetic" (Med Class; metric AUC).
# Citation: Kaggle Diabetic Retinopathy Detection, 2015.
# Licence: Kaggle competition rules (EyePACS).
# Status: runnable (Kaggle credentials: KAGGLE_USERNAME and KAGGLE_KEY, or ~/.kaggle/kaggle.json).
# Source: the Kaggle dataset tanlikesmath/diabetic-retinopathy-resized (where
# GATE's code loads it), one zip through Kaggle's API, its SHA-256 pinned in
# gatepipe.lock.hcl on first download. Read: trainLabels.csv (image, level)
# and the JPEGs of resized_train/resized_train (the archive's cropped copy
# is not read).
# Task: the five retinopathy levels as one-hot targets of a multi-label
# head, scored by per-class and macro AUC, APS and Brier score as in GATE.
# Splits: a seeded 70/10/20 split (GATE's is unseeded). Both eyes of a
# patient can fall into different splits, as in GATE.

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
    url         = "https://www.kaggle.com/api/v1/datasets/download/tanlikesmath/diabetic-retinopathy-resized${var.version != null ? "?datasetVersionNumber=${var.version}" : ""}"
    name        = "diabetic-retinopathy-resized.zip"
    credentials = "kaggle"
  }
  format        = "image_csv"
  task          = "multilabel"
  annotations   = ["trainLabels.csv"]
  images        = ["resized_train/resized_train"]
  image_column  = "image"
  label_column  = "level"
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
    id       = "diabetic"
    name     = "Diabetic Retinopathy (resized)"
    family   = "Med Class"
    metric   = "AUC"
    licence  = "Kaggle competition rules (EyePACS)"
    citation = "Kaggle Diabetic Retinopathy Detection, 2015"
  }
}
