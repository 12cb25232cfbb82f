# Flickr30k — GATE benchmark "flickr30k" (Img-Text; metric Text-Image R@1).
# Citation: Young et al., From image descriptions to visual denotations, TACL 2014.
# Licence: Flickr terms (non-commercial research).
# Status: runnable.
# Source: the Hugging Face dataset nlphuji/flickr30k (where GATE's code loads
# it): flickr30k-images.zip (31,783 JPEGs, ~4.4 GB) and
# flickr_annotations_30k.csv, pinned to a commit with the Hub's SHA-256. GATE
# reads them through the repository's loading script, which datasets 4.0
# removed; gatepipe reads the files themselves.
# Task: image-text retrieval. Each image is paired with the first of its
# five captions (the "raw" column), as word tokens over the training
# captions' vocabulary; metrics are image-to-text and text-to-image Acc@1/@5.
# Splits: by default the CSV's split column (Karpathy's 29k/1k/1k), so no
# seed is involved; split_fractions = [val, test] re-splits all 31,783
# images at random with split_seed, as GATE's loaders do unseeded:
# flickr30k.py [0.15, 0.15], and its NYCC loader, which reads Flickr30k
# (defect D3), [0.05, 0.15]. The tiers pass GATE's under its adapters.

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

variable "split_fractions" {
  description = "null: the CSV's split column (Karpathy's); [val, test]: every image re-split at random with split_seed, these shares to validation and test (GATE's Flickr30k: [0.15, 0.15]; GATE's NYCC loader: [0.05, 0.15])."
  type        = list(number)
  default     = null
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

variable "revision" {
  description = "Hub revision (branch, tag or commit) of nlphuji/flickr30k."
  default     = "main"
}

variable "max_tokens" {
  description = "Captions are cut or padded to this many word tokens."
  default     = 32
}

dataset "data" {
  count = var.enabled ? 1 : 0
  source {
    hf       = "nlphuji/flickr30k"
    revision = var.revision
    files    = ["flickr30k-images.zip", "flickr_annotations_30k.csv"]
  }
  format         = "captions_csv"
  annotations    = ["flickr_annotations_30k.csv"]
  images         = ["flickr30k-images"]
  image_column   = "filename"
  caption_column = "raw"
  split_column   = var.split_fractions == null ? "split" : null
  val_fraction   = var.split_fractions == null ? null : var.split_fractions[0]
  test_fraction  = var.split_fractions == null ? null : var.split_fractions[1]
  max_tokens     = var.max_tokens
  image_size     = var.image_size
  split_seed     = var.split_seed
  max_train      = var.max_train > 0 ? var.max_train : null
  max_val        = var.max_val > 0 ? var.max_val : null
  max_test       = var.max_test > 0 ? var.max_test : null
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
