# iWildCam 2022 — GATE benchmark "iwildcam" (Video Reg; metric MAE Score).
# Citation: Beery et al., The iWildCam 2022 Competition Dataset.
# Licence: CDLA-Permissive (Kaggle competition rules).
#
# As GATE loads it: the Kaggle competition iwildcam2022-fgvc9 (a zip of
# JPEG camera-trap images with COCO-style JSON; join the competition on
# Kaggle and accept its rules first, then use Kaggle credentials) and the
# sequence splits kiyoonkim/iwildcam-2022-splits (train.txt, val.txt,
# test.txt: sequence ids). Read with format camera_traps: every sequence
# with a count (train_sequence_counts.csv) is a clip of its first frames
# frames in seq_frame_num order, zero frames after its last (GATE pads to
# 10), each frame resized to image_size; the target is the number of
# animals, trained with the video head as a regression (MAE Score, MSE
# Loss). The download is about 105 GB; max_train and friends decode only
# the sequences they keep.

variable "enabled" {
  description = "false declares the benchmark without planning its download (a tier module that is only listed)."
  default     = true
}

variable "image_size" {
  description = "[HEIGHT, WIDTH] every frame is resized to (GATE squeezes them to 224x224)."
  default     = [224, 224]
}

variable "frames" {
  description = "Frames per clip (GATE's max_num_frames, 10)."
  default     = 10
}

variable "splits_revision" {
  description = "The revision of kiyoonkim/iwildcam-2022-splits (null: the newest, pinned in the lock file)."
  type        = string
  default     = null
}

variable "split_seed" {
  description = "Seed of the splits gatepipe draws (the subsets max_* keep)."
  default     = 0
}

variable "max_train" {
  description = "Keep at most this many training sequences (0 keeps all): a CPU-sized run."
  default     = 0
}

variable "max_val" {
  description = "Keep at most this many validation sequences, a seeded subset (0 keeps all)."
  default     = 0
}

variable "max_test" {
  description = "Keep at most this many test sequences, a seeded subset (0 keeps all)."
  default     = 0
}

dataset "data" {
  count = var.enabled ? 1 : 0
  source {
    url         = "https://www.kaggle.com/api/v1/competitions/data/download-all/iwildcam2022-fgvc9"
    name        = "iwildcam2022-fgvc9.zip"
    credentials = "kaggle"
  }
  source {
    hf       = "kiyoonkim/iwildcam-2022-splits"
    revision = var.splits_revision
    files    = ["train.txt", "val.txt", "test.txt"]
  }
  format      = "camera_traps"
  annotations = ["metadata/metadata/iwildcam2022_train_annotations.json", "metadata/metadata/train_sequence_counts.csv"]
  images      = ["train/train"]
  train       = ["train.txt"]
  val         = ["val.txt"]
  test        = ["test.txt"]
  frames      = var.frames
  image_size  = var.image_size
  split_seed  = var.split_seed
  max_train   = var.max_train > 0 ? var.max_train : null
  max_val     = var.max_val > 0 ? var.max_val : null
  max_test    = var.max_test > 0 ? var.max_test : null
}

output "dataset" {
  description = "The dataset block's value (null when enabled = false)."
  value       = try(dataset.data[0], null)
}

output "info" {
  description = "What reports repeat about this benchmark."
  value = {
    id       = "iwildcam"
    name     = "iWildCam 2022"
    family   = "Video Reg"
    metric   = "MAE Score"
    licence  = "CDLA-Permissive (Kaggle competition rules)"
    citation = "Beery et al., The iWildCam 2022 Competition Dataset"
  }
}
