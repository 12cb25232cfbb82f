# Kinetics-400 — GATE benchmark "kinetics" (Video Class; metric Acc@1).
# Citation: Kay et al., The Kinetics Human Action Video Dataset, arXiv:1705.06950.
# Licence: CC BY 4.0 (annotations); YouTube terms (videos).
# Status: runnable.
# Source: as GATE loads it: the CVDF's tar.gz parts of the MP4 clips
# (s3.amazonaws.com/kinetics/400/{train,val,test}/part_N.tar.gz: 242, 20 and
# 39 parts, ~450 GB) with the replacements for corrupted clips, and the
# split lists of GATE's decord loader from kiyoonkim/kinetics-400-splits
# (splits_decord_videos/{train,val,test}.csv), pinned in gatepipe.lock.hcl
# (the S3 files by the SHA-256 of their first download).
# Read with format video_list: every listed clip whose video was fetched is
# frames frames (8, GATE's input_frame_length) at the sparse sampler's
# frame indices (one per equal segment of the clip; its uniform mode, so
# every run sees the same frames; GATE samples at random), decoded by
# ffmpeg straight to image_size as GATE's decord reader resizes; its label
# the list's class. A replacement clip takes the place of the clip of the
# same name. Only the clips a split keeps are decoded, so max_* bound the
# decoding; train_parts, val_parts and test_parts bound the download: the
# lists are cut to the clips found, as GATE keeps only the videos it finds.
# The parts are read in place, not extracted: each is decompressed once to
# list it and once more as its clips are decoded, each video copied out
# for ffmpeg and removed once decoded (SPEC §5.1).
# Needs ffmpeg (apt-get install ffmpeg).

variable "enabled" {
  description = "false declares the benchmark without planning its download (a tier module that is only listed)."
  default     = true
}

variable "image_size" {
  description = "[HEIGHT, WIDTH] every frame is decoded at."
  default     = [224, 224]
}

variable "frames" {
  description = "Frames per clip (GATE's input_frame_length, 8)."
  default     = 8
}

variable "revision" {
  description = "Hub revision (branch, tag or commit) of kiyoonkim/kinetics-400-splits."
  default     = "main"
}

variable "train_parts" {
  description = "How many of the 242 train parts (~1.8 GB, ~1,000 clips each) to download."
  default     = 242
  validation {
    condition     = var.train_parts >= 1 && var.train_parts <= 242
    error_message = "train_parts must be between 1 and 242."
  }
}

variable "val_parts" {
  description = "How many of the 20 validation parts to download."
  default     = 20
  validation {
    condition     = var.val_parts >= 1 && var.val_parts <= 20
    error_message = "val_parts must be between 1 and 20."
  }
}

variable "test_parts" {
  description = "How many of the 39 test parts to download."
  default     = 39
  validation {
    condition     = var.test_parts >= 1 && var.test_parts <= 39
    error_message = "test_parts must be between 1 and 39."
  }
}

variable "replacements" {
  description = "Download the CVDF's replacements for corrupted clips (GATE does)."
  default     = true
}

variable "split_seed" {
  description = "Seed of the splits gatepipe draws (only the max_* subsets here: the lists fix the splits)."
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

locals {
  s3 = "https://s3.amazonaws.com/kinetics/400"
  parts = concat(
    [for i in range(var.train_parts) : "${local.s3}/train/part_${i}.tar.gz"],
    [for i in range(var.val_parts) : "${local.s3}/val/part_${i}.tar.gz"],
    [for i in range(var.test_parts) : "${local.s3}/test/part_${i}.tar.gz"],
    var.replacements ? ["${local.s3}/replacement_for_corrupted_k400.tgz"] : [],
  )
}

dataset "data" {
  count = var.enabled ? 1 : 0
  source {
    urls = local.parts
  }
  source {
    hf       = "kiyoonkim/kinetics-400-splits"
    revision = var.revision
    files    = ["splits_decord_videos/train.csv", "splits_decord_videos/val.csv", "splits_decord_videos/test.csv"]
  }
  format     = "video_list"
  train      = ["splits_decord_videos/train.csv"]
  val        = ["splits_decord_videos/val.csv"]
  test       = ["splits_decord_videos/test.csv"]
  images     = var.replacements ? ["replacement_for_corrupted_k400", "."] : ["."]
  frames     = var.frames
  image_size = var.image_size
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
    id       = "kinetics"
    name     = "Kinetics-400"
    family   = "Video Class"
    metric   = "Acc@1"
    licence  = "CC BY 4.0 (annotations); YouTube terms (videos)"
    citation = "Kay et al., The Kinetics Human Action Video Dataset, arXiv:1705.06950"
  }
}
