# The standard library's PyTorch trainer: one benchmark, one model, trained
# by trainer.py (beside this file) speaking the external-trainer protocol
# gatepipe-trainer/1 (SPEC §5.2). Its metrics.json feeds a results block
# like the built-in trainer's. Needs a Python with PyTorch (Debian:
# python3-torch; python3-torchvision for torchvision's models; timm for
# timm:NAME). With gpus = 1 it runs on the GPU gatepipe assigns, one node
# per GPU.
#
#   module "torch_cifar" {
#     source    = "stdlib/trainers/torch"
#     benchmark = benchmark.cifar100
#     arch      = "resnet18"
#     gpus      = 1
#   }
#   results "all" { metrics = [module.torch_cifar.metrics] }

variable "benchmark" {
  description = "A benchmark block (benchmark.NAME): its dataset (a classification or segmentation store), id and category."
  type        = any
}

variable "arch" {
  description = "\"convnet\" (a small CNN), a torchvision model name (resnet18, resnet50, convnext_tiny, ...) or timm:NAME."
  default     = "resnet18"
}

variable "model" {
  description = "The model's name in results (default: arch)."
  type        = string
  default     = null
}

variable "weights" {
  description = "Initial weights: a safetensors state dict in the model's own names (an absolute path, e.g. abspath(\"model.safetensors\")). Tensors that do not fit (the head) start fresh."
  type        = string
  default     = null
}

variable "python" {
  description = "The Python interpreter with PyTorch."
  default     = "python3"
}

variable "lr" {
  default = 1e-3
}

variable "weight_decay" {
  default = 0.01
}

variable "batch_size" {
  default = 128
}

variable "iterations" {
  default = 1000
}

variable "validate_every" {
  default = 200
}

variable "seed" {
  default = 0
}

variable "checkpoint_every" {
  description = "Iterations between resumable checkpoints (null: at validations, at most once a minute; 0: never). After a kill or a preemption the next apply goes on from the last one."
  default     = null
}

variable "cpus" {
  description = "CPU slots (and torch threads) for the node."
  default     = 1
}

variable "gpus" {
  description = "GPUs for the node: 0 (CPU) or 1."
  default     = 0
}

command "train" {
  run    = [var.python, "-c", file("trainer.py")]
  inputs = var.weights == null ? [] : [var.weights]
  experiment = {
    model            = coalesce(var.model, var.arch)
    arch             = var.arch
    benchmark        = var.benchmark.id != "" ? var.benchmark.id : var.benchmark.name
    category         = var.benchmark.category
    dataset          = var.benchmark.dataset
    weights          = var.weights
    lr               = var.lr
    weight_decay     = var.weight_decay
    batch_size       = var.batch_size
    iterations       = var.iterations
    validate_every   = var.validate_every
    seed             = var.seed
    checkpoint_every = var.checkpoint_every
  }
  resources {
    cpus = var.cpus
    gpus = var.gpus
  }
}

output "metrics" {
  description = "The run's metrics.json (for a results block)."
  value       = command.train.metrics
}

output "out_dir" {
  value = command.train.out_dir
}
