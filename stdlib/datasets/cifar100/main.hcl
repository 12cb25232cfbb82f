# CIFAR-100 — GATE benchmark "cifar100" (Img Class; metric Acc@1).
# Citation: Krizhevsky, Learning Multiple Layers of Features from Tiny Images, 2009.
# Licence: no licence stated (Krizhevsky, 2009).
# Status: runnable.
# Source: the Python version from its authors' site, the archive torchvision
# downloads and GATE loads (published md5 eb9058c3a382ffc7106e4002c42a8d85):
# pickled train, test and meta files, read without Python. Its SHA-256 is
# pinned in gatepipe.lock.hcl on first download. (format = "cifar100" also
# reads the binary version, cifar-100-binary.tar.gz.) Validation: a seeded
# 10% of train (GATE's split is unseeded).

variable "enabled" {
  description = "false declares the benchmark without planning its download (a tier module that is only listed)."
  default     = true
}

variable "image_size" {
  description = "Images are resized to [H, W] (32x32 as published)."
  default     = [32, 32]
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
    url = "https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz"
  }
  format       = "cifar100"
  train        = ["cifar-100-python/train"]
  examples     = { train = 50000, test = 10000 } # published: plan's store size
  test         = ["cifar-100-python/test"]
  val_fraction = 0.1
  image_size   = var.image_size
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
    id       = "cifar100"
    name     = "CIFAR-100"
    family   = "Img Class"
    metric   = "Acc@1"
    licence  = "no licence stated (Krizhevsky, 2009)"
    citation = "Krizhevsky, Learning Multiple Layers of Features from Tiny Images, 2009"
  }
}
