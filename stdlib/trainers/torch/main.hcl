# The standard library's PyTorch trainer: one benchmark, one model a
# library builds by name (a torchvision model, timm:NAME, or gatepipe's
# small convnet), trained by a train block on the torch runtime: the same
# worker, heads, checkpoints and metrics as every other block with
# runtime = "torch" (SPEC §5.8). Its metrics feed a results block like any
# train block's. Needs a Python with PyTorch (Debian: python3-torch;
# python3-torchvision for torchvision's models; timm for timm:NAME). With
# gpus = 1 it runs on the GPU gatepipe assigns, one node per GPU.
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
  description = "\"convnet\" (gatepipe's small CNN), a torchvision model name (resnet18, resnet50, convnext_tiny, ...) or timm:NAME."
  default     = "resnet18"
}

variable "task" {
  description = "The benchmark's task family (classification, segmentation, multilabel, regression, ...): the head the model trains with."
  default     = "classification"
}

variable "model" {
  description = "The model's name in results (default: arch)."
  type        = string
  default     = null
}

variable "weights" {
  description = "Initial weights: a state dict in the model's own names (safetensors or a torch.save file; an absolute path, e.g. abspath(\"model.safetensors\"), hf:OWNER/NAME or torchvision:NAME.WEIGHTS). Tensors that do not fit (the classifier) start fresh."
  type        = string
  default     = null
}

variable "python" {
  description = "The Python interpreter with PyTorch (null: the gatepipe block's, else $GATEPIPE_PYTHON, else python3)."
  type        = string
  default     = null
}

variable "lr" {
  description = "Learning rate (null: gatepipe's default for the task)."
  default     = null
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

locals {
  arch = var.arch == "convnet" || length(regexall("^(timm|torchvision):", var.arch)) > 0 ? var.arch : "torchvision:${var.arch}"
}

encoder "model" {
  arch     = local.arch
  channels = [32, 64]
  weights  = coalesce(var.weights, "")
}

adapter "head" {
  task = var.task
}

recipe "r" {
  lr               = var.lr
  weight_decay     = var.weight_decay
  batch_size       = var.batch_size
  iterations       = var.iterations
  validate_every   = var.validate_every
  seed             = var.seed
  checkpoint_every = var.checkpoint_every
}

train "run" {
  encoder   = encoder.model
  adapter   = adapter.head
  recipe    = recipe.r
  benchmark = var.benchmark
  model     = coalesce(var.model, var.arch)
  runtime   = "torch"
  python    = var.python
  resources {
    cpus = var.cpus
    gpus = var.gpus
  }
}

output "metrics" {
  description = "The run's metrics (for a results block)."
  value       = train.run.metrics
}

output "out_dir" {
  value = train.run.out_dir
}
