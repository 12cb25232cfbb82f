# A pretrained encoder evaluated the cheap way: frozen features of
# Fashion-MNIST from a ResNet-18 loaded from a safetensors file (images
# resized, centre-cropped and normalised as its config.json says), then a
# linear probe trained on the cached features. A second apply is fully
# cached.
#
#   gatepipe apply examples/pretrained_probe
#
# The weights come from make_weights.py (torchvision's resnet18, seeded,
# since no model hub is reachable here). To probe real weights, point
# encoder.resnet18's weights at a hub's model.safetensors with its
# config.json beside it (timm: resnet18.a1_in1k), or at a torchvision
# state_dict saved as safetensors.

variable "python" {
  description = "Python with torchvision (Debian: python3-torchvision)."
  default     = "/usr/bin/python3"
}

module "fashion" {
  source    = "stdlib/datasets/fashion_mnist"
  max_train = 2000
  max_val   = 500
  max_test  = 1000
}

command "weights" {
  run     = [var.python, "make_weights.py", self.out_dir]
  inputs  = ["make_weights.py"]
  outputs = { weights = "resnet18.safetensors", config = "config.json" }
}

# The preset fills torchvision's ResNet-18 (ImageNet stem, basic blocks,
# [2, 2, 2, 2]); the names are detected as torchvision's; the
# preprocessing comes from config.json beside the weights (64x64,
# bilinear, ImageNet mean and std; grey images repeated to 3 channels).
encoder "resnet18" {
  preset  = "resnet18"
  weights = command.weights.outputs["weights"]
}

benchmark "fashion" {
  dataset  = module.fashion.dataset.path
  id       = "fashion-mnist"
  category = "Img Class"
}

features "resnet18" {
  encoder   = encoder.resnet18
  benchmark = benchmark.fashion
}

benchmark "resnet18_features" {
  dataset  = features.resnet18.path
  id       = "fashion-mnist"
  category = "Img Class"
}

# A linear probe: an mlp encoder with no hidden layer is the identity, so
# the trained part is the linear classification head.
encoder "identity" {
  arch   = "mlp"
  hidden = []
}

adapter "cls" {}

recipe "probe" {
  lr             = 1e-3
  batch_size     = 128
  iterations     = 600
  validate_every = 100
  top_k          = 1
}

train "probe" {
  encoder   = encoder.identity
  adapter   = adapter.cls
  recipe    = recipe.probe
  benchmark = benchmark.resnet18_features
  model     = "resnet18-linear-probe"
}

output "feature_dim" {
  value = features.resnet18.dim
}

output "probe_acc1" {
  value = train.probe.acc1
}
