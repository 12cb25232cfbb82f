# baseGATE: the 15-benchmark tier the GATE paper publishes (Figure 4,
# "fig4b_small_gate_tier" in stdlib/data/gate_combinations.csv), most important first.
# A search block writes modules of the same shape for the tiers it finds.
#
# With an encoder it also runs: every benchmark of the tier that gatepipe
# can read is downloaded (pinned in gatepipe.lock.hcl), evaluated with
# GATE's task adapter, collected in a results matrix, and the encoder's
# placement among the paper's 21 encoders is predicted with EEVEE:
#
#   encoder "mine" { preset = "resnet50"  weights = "model.safetensors" }
#   module "gate" {
#     source  = "stdlib/tiers/base"
#     encoder = encoder.mine
#     scale   = "cpu"          # "full" (default), "cpu", "test", "smoke" or an object
#   }
#
# Outputs: benchmarks, measured, not_run, table, position, report.

variable "encoder" {
  description = "The encoder to evaluate (encoder.NAME); without it the module only lists the tier."
  type        = any
  default     = null
}

variable "model" {
  description = "The encoder's name in results."
  default     = "mine"
}

variable "scale" {
  description = "\"full\", \"cpu\", \"test\", \"smoke\" or an object of overrides (stdlib/tiers/run)."
  type        = any
  default     = "full"
  validation {
    condition     = contains(["full", "cpu", "test", "smoke"], try(tostring(var.scale), "")) || can(keys(var.scale))
    error_message = "scale must be \"full\", \"cpu\", \"test\", \"smoke\" or an object overriding full's fields (stdlib/tiers/run), not ${try(jsonencode(var.scale), "that")}."
  }
}

variable "protocol" {
  description = "\"finetune\" (GATE's) or \"linear_probe\"."
  default     = "finetune"
  validation {
    condition     = contains(["finetune", "linear_probe"], var.protocol)
    error_message = "protocol must be \"finetune\" or \"linear_probe\", not \"${var.protocol}\"."
  }
}

variable "lr" {
  description = "The learning rate of every train block (null: GATE's for the encoder's family with GATE's adapters, else gatepipe's default; SPEC §5.9)."
  type        = number
  default     = null
}

variable "batch_size" {
  description = "The batch of every train block (null: GATE's for the task family at full scale with GATE's adapters, else the scale's)."
  type        = number
  default     = null
}

variable "iterations" {
  description = "Training iterations of every train block (null: the scale's; full: GATE's 10,000)."
  type        = number
  default     = null
}

variable "adapters" {
  description = "\"table3\": GATE's own task adapters and recipe as its code produced Table 3, its defects included (stdlib/data/gate_protocol.json, SPEC §5.9); \"gate\": the same with GATE's defects mended; both on the torch runtime. \"compact\": gatepipe's small heads, on either runtime. Default: table3, except with trainer = \"builtin\"."
  type        = string
  default     = null
  validation {
    condition     = var.adapters == null || contains(["table3", "gate", "compact"], coalesce(var.adapters, "table3"))
    error_message = "adapters must be \"table3\", \"gate\" or \"compact\", not \"${coalesce(var.adapters, "")}\"."
  }
}

variable "trainer" {
  description = "\"auto\" (the torch runtime on one GPU per node where the machine has GPUs and python's torch sees them, else the Go runtime), \"builtin\" (the Go runtime, CPU) or \"torch\" (the torch runtime: the encoder in PyTorch, on GPUs with gpus = 1; see stdlib/tiers/run)."
  default     = "auto"
  validation {
    condition     = contains(["auto", "builtin", "torch"], var.trainer)
    error_message = "trainer must be \"auto\", \"builtin\" or \"torch\", not \"${var.trainer}\"."
  }
}

variable "torch_arch" {
  description = "With trainer = \"torch\": a torchvision name (resnet18, ...), timm:NAME or convnet, trained on every benchmark on the torch runtime instead of the encoder (default: the encoder itself)."
  type        = string
  default     = null
}

variable "gpus" {
  description = "GPUs per train node (0 or 1; null: the runtime's choice, see stdlib/tiers/run)."
  type        = number
  default     = null
  validation {
    condition     = var.gpus == null || var.gpus == 0 || var.gpus == 1
    error_message = "gpus is the GPUs of each train node: 0 (CPU) or 1 (one GPU per node; nodes run on every GPU at once)."
  }
}

variable "cpus" {
  description = "CPU cores per train node (null: the runtime's choice, see stdlib/tiers/run)."
  type        = number
  default     = null
}

variable "python" {
  description = "The Python with PyTorch for trainer = \"torch\" or \"auto\" (null: the pipeline's, else $GATEPIPE_PYTHON, else python3)."
  type        = string
  default     = null
}

variable "split_seed" {
  default = 0
}

variable "seed" {
  default = 0
}

variable "seeds" {
  description = "Seeds to train each benchmark with; results show mean ± std (n)."
  type        = list(number)
  default     = []
}

locals {
  benchmarks = [
    "iwildcam",
    "hmdb51",
    "clevr-math",
    "winoground",
    "nycc",
    "acdc",
    "coco-10k",
    "cifar100",
    "mini",
    "nyu",
    "imagenet1k",
    "fungi",
    "food101",
    "omniglot",
    "aircraft",
  ]
}

module "run" {
  source     = "stdlib/tiers/run"
  benchmarks = local.benchmarks
  tier_name  = "Base"
  encoder    = var.encoder
  model      = var.model
  scale      = var.scale
  protocol   = var.protocol
  trainer    = var.trainer
  adapters   = var.adapters
  lr         = var.lr
  batch_size = var.batch_size
  iterations = var.iterations
  gpus       = var.gpus
  cpus       = var.cpus
  torch_arch = var.torch_arch
  python     = var.python
  split_seed = var.split_seed
  seed       = var.seed
  seeds      = var.seeds
}

output "benchmarks" {
  description = "The 15 benchmarks of baseGATE."
  value       = local.benchmarks
}

output "measured" {
  value = module.run.measured
}

output "not_run" {
  value = module.run.not_run
}

output "table" {
  value = module.run.table
}

output "position" {
  value = module.run.position
}

output "report" {
  value = module.run.report
}

output "source" {
  value = "GATE paper, Figure 4 (fig4b_small_gate_tier)"
}
