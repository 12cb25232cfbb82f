# CheXpert (GATE loads NIH ChestX-ray14) — GATE benchmark "chexpert" (Med Class; metric AUC).
# Citation: Irvin et al., CheXpert, AAAI 2019 / Wang et al., ChestX-ray8, CVPR 2017.
# Licence: NIH ChestX-ray14: CC0; CheXpert: Stanford research agreement.
# Status: runnable.
# Source: GATE's "chexpert" loader reads NIH ChestX-ray14 from the Hugging
# Face dataset alkzar90/NIH-Chest-X-ray-dataset; so does this module (the
# Stanford CheXpert set needs a signed agreement and is not offered). Files:
# data/images/images_001..012.zip (112,120 grey PNGs, ~45 GB),
# data/Data_Entry_2017_v2020.csv and the official data/train_val_list.txt
# and data/test_list.txt, pinned to a commit with the Hub's SHA-256.
# Task: the "|"-separated findings as a multi-label head, scored by
# per-class and macro AUC, APS and Brier score. labels = "table3" (the
# default) keeps what GATE's loader kept for Table 3 (defect D5): the
# dataset's label ids 2, 5, 6, 8 and 10, in that order, which are NIH's
# Cardiomegaly, Mass, Nodule, Pneumothorax and Edema although GATE names
# them cardiomegaly, edema, consolidation, atelectasis and pleural-effusion;
# they are the matrix's per-class columns 0-4. labels = "gate" mends D5:
# the five findings GATE names (Cardiomegaly, Edema, Consolidation,
# Atelectasis, Effusion), in GATE's order. Both drop the images with none
# of the five. labels = "all": the 14 findings and "No Finding".
# Splits: the official patient-wise train/test lists; validation is a seeded
# 10% of train (GATE's split is unseeded).

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

variable "labels" {
  description = "\"table3\": the five NIH findings GATE's loader kept for Table 3, its label ids 2, 5, 6, 8, 10 (Cardiomegaly, Mass, Nodule, Pneumothorax, Edema: the matrix's chexpert columns 0-4; defect D5, gate/data/medical/classification/chexpert.py); \"gate\": the five findings GATE names (Cardiomegaly, Edema, Consolidation, Atelectasis, Effusion), D5 mended; both drop images with none of the five; \"all\": the 14 findings and \"No Finding\"."
  default     = "table3"
  validation {
    condition     = contains(["table3", "gate", "all"], var.labels)
    error_message = "labels must be \"table3\", \"gate\" or \"all\", not \"${var.labels}\"."
  }
}

variable "revision" {
  description = "Hub revision (branch, tag or commit) of alkzar90/NIH-Chest-X-ray-dataset."
  default     = "main"
}

locals {
  keep = {
    table3 = ["Cardiomegaly", "Mass", "Nodule", "Pneumothorax", "Edema"]
    gate   = ["Cardiomegaly", "Edema", "Consolidation", "Atelectasis", "Effusion"]
  }
}

dataset "data" {
  count = var.enabled ? 1 : 0
  source {
    hf       = "alkzar90/NIH-Chest-X-ray-dataset"
    revision = var.revision
    files    = ["data/images/images_*.zip", "data/Data_Entry_2017_v2020.csv", "data/train_val_list.txt", "data/test_list.txt"]
  }
  format          = "image_csv"
  task            = "multilabel"
  annotations     = ["data/Data_Entry_2017_v2020.csv"]
  image_column    = "Image Index"
  label_column    = "Finding Labels"
  label_separator = "|"
  train           = ["data/train_val_list.txt"]
  test            = ["data/test_list.txt"]
  val_fraction    = 0.1
  keep_classes    = var.labels == "all" ? null : local.keep[var.labels]
  channels        = 1
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
    id       = "chexpert"
    name     = "CheXpert (GATE loads NIH ChestX-ray14)"
    family   = "Med Class"
    metric   = "AUC"
    licence  = "NIH ChestX-ray14: CC0; CheXpert: Stanford research agreement"
    citation = "Irvin et al., CheXpert, AAAI 2019 / Wang et al., ChestX-ray8, CVPR 2017"
  }
}
