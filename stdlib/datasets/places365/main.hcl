# Places365 (small) — GATE benchmark "places365" (Img Class; metric Acc@1).
# Citation: Zhou et al., Places: A 10 million Image Database for Scene Recognition, TPAMI 2017.
# Licence: Places terms (non-commercial research).
#
# As GATE loads it (torchvision's Places365, split "train-standard",
# small = True): the 256 px JPEG tars and the file lists from MIT's
# server, read with format image_list ("IMAGE LABEL" lines). The 36,500
# official validation images are the test split, as in GATE; validation is
# drawn from train with val_fraction (seeded). torchvision publishes only
# MD5s for these files; gatepipe pins their SHA-256 in gatepipe.lock.hcl at
# the first fetch.

variable "enabled" {
  description = "false declares the benchmark without planning its download (a tier module that is only listed)."
  default     = true
}

variable "image_size" {
  description = "[HEIGHT, WIDTH] the images are resized to (the files are 256x256)."
  default     = [224, 224]
}

variable "store" {
  description = "How the store keeps the images: \"jpeg\" (quality 90, about a sixth of raw's bytes on photographs, decoded as they are read) or \"raw\"."
  default     = "jpeg"
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
    url = "http://data.csail.mit.edu/places/places365/filelist_places365-standard.tar"
  }
  source {
    url = "http://data.csail.mit.edu/places/places365/train_256_places365standard.tar"
  }
  source {
    url = "http://data.csail.mit.edu/places/places365/val_256.tar"
  }
  format       = "image_list"
  train        = ["places365_train_standard.txt"]
  test         = ["places365_val.txt"]
  images       = ["data_256", "val_256"]
  val_fraction = 0.1
  image_size   = var.image_size
  store        = var.store
  split_seed   = var.split_seed
  max_train    = var.max_train > 0 ? var.max_train : null
  max_val      = var.max_val > 0 ? var.max_val : null
  max_test     = var.max_test > 0 ? var.max_test : null
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
