# Flickr30k — GATE benchmark "flickr30k" (Img-Text; metric Text-Image R@1).
# Citation: Young et al., From image descriptions to visual denotations, TACL 2014.
# Licence: Flickr terms (non-commercial research).
# Status: needs a reader: zip of JPEGs with a captions CSV.
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
    url = "unavailable:flickr30k"
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
    id       = "flickr30k"
    name     = "Flickr30k"
    family   = "Img-Text"
    metric   = "Text-Image R@1"
    licence  = "Flickr terms (non-commercial research)"
    citation = "Young et al., From image descriptions to visual denotations, TACL 2014"
  }
}
