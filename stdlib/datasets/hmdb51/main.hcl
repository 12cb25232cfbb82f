# HMDB51 — GATE benchmark "hmdb51" (Video Class; metric Acc@1).
# Citation: Kuehne et al., HMDB, ICCV 2011.
# Licence: CC BY 4.0.
#
# As GATE loads it: kiyoonkim/hmdb51-gulprgb, GulpIO chunks of JPEG frames
# (gulp_rgb/data_N.gulp with meta_N.gmeta) and the split lists of GATE's
# sparse-sample loader (splits_gulp_rgb/train1.csv, test1.csv: split 1). Read with
# format gulp: every listed clip is frames frames (8, GATE's
# input_frame_length) sampled as GATE's sparse sampler samples them (one
# per equal segment; its uniform mode, so every run sees the same frames),
# each resized to image_size; its label the class. Validation is drawn from
# train with val_fraction (seeded). Only the clips a split keeps are
# decoded.

variable "enabled" {
  description = "false declares the benchmark without planning its download (a tier module that is only listed)."
  default     = true
}

variable "image_size" {
  description = "[HEIGHT, WIDTH] every frame is resized to."
  default     = [224, 224]
}

variable "frames" {
  description = "Frames per clip (GATE's input_frame_length, 8)."
  default     = 8
}

variable "revision" {
  description = "The repository revision (null: the newest, pinned in the lock file)."
  type        = string
  default     = null
}

variable "split_seed" {
  description = "Seed of the splits gatepipe draws (validation from train)."
  default     = 0
}

variable "max_train" {
  description = "Keep at most this many training clips (0 keeps all): a CPU-sized run."
  default     = 0
}

variable "max_val" {
  description = "Keep at most this many validation clips, a seeded subset (0 keeps all)."
  default     = 0
}

variable "max_test" {
  description = "Keep at most this many test clips, a seeded subset (0 keeps all)."
  default     = 0
}

dataset "data" {
  count = var.enabled ? 1 : 0
  source {
    hf       = "kiyoonkim/hmdb51-gulprgb"
    revision = var.revision
    files    = ["gulp_rgb/*", "splits_gulp_rgb/train1.csv", "splits_gulp_rgb/test1.csv"]
  }
  format       = "gulp"
  images       = ["gulp_rgb"]
  train        = ["splits_gulp_rgb/train1.csv"]
  test         = ["splits_gulp_rgb/test1.csv"]
  val_fraction = 0.1
  frames       = var.frames
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
    id       = "hmdb51"
    name     = "HMDB51"
    family   = "Video Class"
    metric   = "Acc@1"
    licence  = "CC BY 4.0"
    citation = "Kuehne et al., HMDB, ICCV 2011"
  }
}
