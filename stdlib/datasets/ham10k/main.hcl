# HAM10000 — GATE benchmark "ham10k" (Med Class; metric AUC).
# Citation: Tschandl et al., The HAM10000 dataset, Scientific Data 2018.
# Licence: CC BY-NC-SA 4.0.
# Status: needs a reader: Kaggle zip of JPEGs with a label CSV.
# Declared, not runnable yet: gatepipe has no reader for this benchmark's
# format (image_csv), and validate says so instead of pretending.

variable "enabled" {
  description = "false declares the benchmark without planning its download (a tier module that is only listed)."
  default     = true
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
    url = "unavailable:ham10k"
  }
  format     = "image_csv"
  split_seed = var.split_seed
  max_train  = var.max_train > 0 ? var.max_train : null
  max_val    = var.max_val > 0 ? var.max_val : null
  max_test   = var.max_test > 0 ? var.max_test : null
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
