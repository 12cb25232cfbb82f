# Winoground — GATE benchmark "winoground" (Img-Text; metric Text-Image R@1).
# Citation: Thrush et al., Winoground, CVPR 2022.
# Licence: Winoground licence (research; gated on the Hub).
# Status: needs a reader: image-pair/caption-pair retrieval.
# Declared, not runnable yet: gatepipe has no reader for this benchmark's
# format (captions_zip), and validate says so instead of pretending.

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
    url = "unavailable:winoground"
  }
  format     = "captions_zip"
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
    id       = "winoground"
    name     = "Winoground"
    family   = "Img-Text"
    metric   = "Text-Image R@1"
    licence  = "Winoground licence (research; gated on the Hub)"
    citation = "Thrush et al., Winoground, CVPR 2022"
  }
}
