# NYU Depth v2 — GATE benchmark "nyu" (Img Seg; metric mIoU).
# Citation: Silberman et al., Indoor Segmentation and Support Inference from RGBD Images, ECCV 2012.
# Licence: research use.
# Status: runnable.
# Source: the Hugging Face dataset sayakpaul/nyu_depth_v2 (where GATE's code
# loads it): fast-depth's preprocessed NYU Depth v2 (Wofk et al.), 12 train
# and 2 validation tar shards (~32 GB) of HDF5 files, one per frame, each an
# "rgb" [3, 480, 640] uint8 image and a "depth" [480, 640] float32 map in
# metres, pinned to a commit in gatepipe.lock.hcl with the Hub's SHA-256.
# GATE reads them through the repository's loading script, which datasets
# 4.0 removed; gatepipe reads the tars and the HDF5 files themselves
# (formats/hdf5, pure Go).
# Task: what GATE trains, which is not NYU's semantic segmentation. GATE's
# loader uses the depth map as the label image and its transforms turn it
# into integers with .long(), so the "classes" are whole metres of depth
# (0 to 9), scored as segmentation over the 38 class names of GATE's list
# (most of which never occur). gatepipe reproduces this on purpose, so that
# results compare with the paper's matrix; the semantic labels of NYU's
# labelled subset are not in this source.
# Splits: the source's validation shards (654 frames) are the test split;
# validation is a seeded 10% of train, as GATE draws it (unseeded there).
# train_shards downloads fewer of the 12 train shards (about 2.7 GB each)
# for a smaller run.

variable "enabled" {
  description = "false declares the benchmark without planning its download (a tier module that is only listed)."
  default     = true
}

variable "revision" {
  description = "Hub revision (branch, tag or commit) of sayakpaul/nyu_depth_v2."
  default     = "main"
}

variable "train_shards" {
  description = "How many of the 12 train tar shards to download (1 to 12): fewer for a smaller run."
  default     = 12
  validation {
    condition     = var.train_shards >= 1 && var.train_shards <= 12
    error_message = "train_shards must be between 1 and 12."
  }
}

variable "image_size" {
  description = "Images are resized to [H, W] (bilinear), depth labels by nearest neighbour."
  default     = [224, 224]
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
    hf       = "sayakpaul/nyu_depth_v2"
    revision = var.revision
    files    = concat([for i in range(var.train_shards) : format("data/train-%06d.tar", i)], ["data/val-000000.tar", "data/val-000001.tar"])
  }
  format       = "hdf5"
  train        = ["train/*/*.h5"]
  test         = ["val/*/*.h5"]
  val_fraction = 0.1
  image_column = "rgb"
  label_column = "depth"
  image_size   = var.image_size
  split_seed   = var.split_seed
  max_train    = var.max_train > 0 ? var.max_train : null
  max_val      = var.max_val > 0 ? var.max_val : null
  max_test     = var.max_test > 0 ? var.max_test : null
  class_names = ["bed", "objects", "chair", "furniture", "ceiling", "floor", "wall", "window", "building", "sky", "cabinet",
    "table", "door", "light", "sofa", "shelf", "stairs", "curtain", "dresser", "pillow", "mirror", "floormat", "clothes",
    "books", "refrigerator", "television", "paper", "towel", "shower curtain", "box", "whiteboard", "person", "night stand",
  "toilet", "sink", "lamp", "bathtub", "bag"]
}

output "dataset" {
  description = "The dataset block's value (null when enabled = false)."
  value       = try(dataset.data[0], null)
}

output "info" {
  description = "What reports repeat about this benchmark."
  value = {
    id       = "nyu"
    name     = "NYU Depth v2"
    family   = "Img Seg"
    metric   = "mIoU"
    licence  = "research use"
    citation = "Silberman et al., Indoor Segmentation and Support Inference from RGBD Images, ECCV 2012"
  }
}
