# CLEVR-Math — GATE benchmark "clevr-math" (VQA; metric Acc@1).
# Citation: Lindström & Abraham, CLEVR-Math, 2022.
# Licence: CC BY 4.0.
# Status: needs a reader: CLEVR zips with question JSON.
# Declared, not runnable yet: gatepipe has no reader for this benchmark's
# format (vqa_json), and validate says so instead of pretending.

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
    url = "unavailable:clevr-math"
  }
  format     = "vqa_json"
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
    id       = "clevr-math"
    name     = "CLEVR-Math"
    family   = "VQA"
    metric   = "Acc@1"
    licence  = "CC BY 4.0"
    citation = "Lindström & Abraham, CLEVR-Math, 2022"
  }
}
