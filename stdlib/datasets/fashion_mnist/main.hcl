# Fashion-MNIST (Xiao et al., 2017) from Debian's dataset-fashion-mnist
# package: 60,000 training and 10,000 test images of 28x28 grey clothing
# items in 10 classes. Install with `apt-get install dataset-fashion-mnist`,
# or point `dir` at any directory holding the four IDX .gz files.

variable "dir" {
  description = "Directory holding the Fashion-MNIST IDX .gz files."
  default     = "/usr/share/datasets/fashion-mnist"
}

variable "val_fraction" {
  description = "Share of the training set held out for validation."
  default     = 0.1
}

variable "split_seed" {
  description = "Seed of the train/validation split (independent of any training seed)."
  default     = 0
}

variable "max_train" {
  description = "Keep at most this many training examples (0 keeps all)."
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

variable "keep_classes" {
  description = "Keep only these classes (by name), relabelled in this order; empty keeps all ten."
  default     = []
}

locals {
  files = {
    "train-images-idx3-ubyte.gz" = "b0564c3eedabfbf835052cff8503ea422014ce006caf5b757f851416ee8300c7"
    "train-labels-idx1-ubyte.gz" = "0ae29f65d86684f32d1b9c85147786c547b9c6aebcaf235f0400a0cce308b056"
    "t10k-images-idx3-ubyte.gz"  = "cc1d090a38ace84dfa1aa66e3ada7c336ef481a96936906477e6dd344da56eaa"
    "t10k-labels-idx1-ubyte.gz"  = "8d3605d196f4be44669e46906da9733c8131fef761fdbfec72c424d5222f1a05"
  }
}

dataset "fashion" {
  source {
    url    = "${var.dir}/train-images-idx3-ubyte.gz"
    sha256 = local.files["train-images-idx3-ubyte.gz"]
  }
  source {
    url    = "${var.dir}/train-labels-idx1-ubyte.gz"
    sha256 = local.files["train-labels-idx1-ubyte.gz"]
  }
  source {
    url    = "${var.dir}/t10k-images-idx3-ubyte.gz"
    sha256 = local.files["t10k-images-idx3-ubyte.gz"]
  }
  source {
    url    = "${var.dir}/t10k-labels-idx1-ubyte.gz"
    sha256 = local.files["t10k-labels-idx1-ubyte.gz"]
  }

  format       = "idx"
  train        = ["train-images-idx3-ubyte", "train-labels-idx1-ubyte"]
  test         = ["t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"]
  val_fraction = var.val_fraction
  split_seed   = var.split_seed
  max_train    = var.max_train > 0 ? var.max_train : null
  max_val      = var.max_val > 0 ? var.max_val : null
  max_test     = var.max_test > 0 ? var.max_test : null
  keep_classes = length(var.keep_classes) > 0 ? var.keep_classes : null
  class_names  = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"]
}

output "dataset" {
  description = "The processed Fashion-MNIST example store."
  value       = dataset.fashion
}
