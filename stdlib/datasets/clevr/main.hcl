# CLEVR — GATE benchmark "clevr" (VQA; metric Acc@1).
# Citation: Johnson et al., CLEVR, CVPR 2017.
# Licence: CC BY 4.0.
#
# As GATE loads it: the Kaggle dataset timoboz/clevr-dataset (the official
# CLEVR_v1.0 zip: PNG scenes and question JSON), needing Kaggle
# credentials. Read with format vqa_json: each question with its image is
# an example of the relational head, its answer the class. CLEVR's test
# questions carry no answers, so its val questions are the test split and
# validation is drawn from train with val_fraction (seeded). Training
# reports Acc@1 and, as the paper's matrix does, Acc@1 per question type
# (Colour, Count, Material, Shape, Size, Yes/No: CLEVR's answer spaces do
# not overlap, so the answer gives the type).

variable "enabled" {
  description = "false declares the benchmark without planning its download (a tier module that is only listed)."
  default     = true
}

variable "image_size" {
  description = "[HEIGHT, WIDTH] the scenes are resized to (the files are 480x320)."
  default     = [224, 224]
}

variable "version" {
  description = "The Kaggle dataset version to download (null: the latest, pinned in the lock file)."
  type        = number
  default     = null
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
    url         = "https://www.kaggle.com/api/v1/datasets/download/timoboz/clevr-dataset${var.version != null ? "?datasetVersionNumber=${var.version}" : ""}"
    name        = "clevr-dataset.zip"
    credentials = "kaggle"
  }
  format       = "vqa_json"
  train        = ["CLEVR_v1.0/questions/CLEVR_train_questions.json"]
  test         = ["CLEVR_v1.0/questions/CLEVR_val_questions.json"]
  images       = ["CLEVR_v1.0/images/train", "CLEVR_v1.0/images/val"]
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
    id       = "clevr"
    name     = "CLEVR"
    family   = "VQA"
    metric   = "Acc@1"
    licence  = "CC BY 4.0"
    citation = "Johnson et al., CLEVR, CVPR 2017"
  }
}
