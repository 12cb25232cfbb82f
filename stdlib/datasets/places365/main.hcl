# Places365 (small) — GATE benchmark "places365" (Img Class; metric Acc@1).
# Citation: Zhou et al., Places: A 10 million Image Database for Scene Recognition, TPAMI 2017.
# Licence: Places terms (non-commercial research).
# Status: needs a reader: torchvision's Places365 tar of JPEGs with file-list annotations.
# Declared, not runnable yet: gatepipe has no reader for this benchmark's
# format (image_list), and validate says so instead of pretending.

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
    url = "unavailable:places365"
  }
  format     = "image_list"
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
    id       = "places365"
    name     = "Places365 (small)"
    family   = "Img Class"
    metric   = "Acc@1"
    licence  = "Places terms (non-commercial research)"
    citation = "Zhou et al., Places: A 10 million Image Database for Scene Recognition, TPAMI 2017"
  }
}
