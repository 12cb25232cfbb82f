# PASCAL-Context — GATE benchmark "pascal" (Img Seg; metric mIoU).
# Citation: Mottaghi et al., The Role of Context for Object Detection and Semantic Segmentation in the Wild, CVPR 2014.
# Licence: PASCAL VOC terms (Flickr images).
#
# As GATE loads it: VOC2010's trainval tar (JPEGImages) and PASCAL-Context's
# trainval.tar.gz (one MAT-file per image, its LabelMap), read with format
# voc_mat: every image with a label map, both resized to image_size (the
# map by nearest neighbour), split 80/10/10 with a seed (GATE's
# random_split has none). GATE keeps a LabelMap's values below its 60 class
# names as those classes and the others as background; the LabelMap's
# values are indices into PASCAL-Context's 459 labels, so its "aeroplane"
# is label 1 of the 459 (accordion). gatepipe reproduces this, so that
# results compare with the paper's matrix; the standard 59-class mapping
# is another benchmark.

variable "enabled" {
  description = "false declares the benchmark without planning its download (a tier module that is only listed)."
  default     = true
}

variable "image_size" {
  description = "[HEIGHT, WIDTH] images and label maps are resized to."
  default     = [224, 224]
}

variable "split_seed" {
  description = "Seed of the 80/10/10 split."
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
    url = "http://host.robots.ox.ac.uk/pascal/VOC/voc2010/VOCtrainval_03-May-2010.tar"
  }
  source {
    url = "https://cs.stanford.edu/~roozbeh/pascal-context/trainval.tar.gz"
  }
  format        = "voc_mat"
  annotations   = ["trainval/*.mat"]
  images        = ["VOCdevkit/VOC2010/JPEGImages"]
  val_fraction  = 0.1
  test_fraction = 0.1
  class_names = ["background", "aeroplane", "bag", "bed", "bedclothes", "bench", "bicycle", "bird", "boat", "book", "bottle",
    "building", "bus", "cabinet", "car", "cat", "ceiling", "chair", "cloth", "computer", "cow", "cup", "curtain", "dog", "door",
    "fence", "floor", "flower", "food", "grass", "ground", "horse", "keyboard", "light", "motorbike", "mountain", "mouse",
    "person", "plate", "platform", "pottedplant", "road", "rock", "sheep", "shelves", "sidewalk", "sign", "sky", "snow", "sofa",
  "table", "track", "train", "tree", "truck", "tvmonitor", "wall", "water", "window", "wood"]
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
    id       = "pascal"
    name     = "PASCAL-Context"
    family   = "Img Seg"
    metric   = "mIoU"
    licence  = "PASCAL VOC terms (Flickr images)"
    citation = "Mottaghi et al., The Role of Context for Object Detection and Semantic Segmentation in the Wild, CVPR 2014"
  }
}
