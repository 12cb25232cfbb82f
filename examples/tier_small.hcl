# GATE's small tier (iWildCam, ADE20K, CLEVR-Math, ACDC, ImageNet-1k,
# mini-ImageNet, CUB-200, CIFAR-100) for your encoder: every benchmark
# gatepipe can read is downloaded once (pinned in gatepipe.lock.hcl),
# evaluated with GATE's task adapter, collected in a results table, and
# your encoder's results on the whole 31-benchmark pool and its placement
# among the paper's 21 encoders are predicted with EEVEE; a report shows
# it all beside the paper's matrix.
#
#   gatepipe plan examples/tier_small.hcl                         # what it downloads, and the disk it needs
#   HF_TOKEN=hf_... gatepipe apply examples/tier_small.hcl -var weights=model.safetensors
#   gatepipe apply examples/tier_small.hcl -var scale=cpu         # a CPU-sized run of the same declarations
#
# ImageNet-1k is gated on the Hub: accept its terms there and set HF_TOKEN.
# A benchmark that cannot run (its data unreachable, or the encoder lacking
# the modality) is listed in the not_run output and predicted, not
# measured. On a compute node without network:
# `gatepipe fetch` on the login node, then `apply -offline`; or, with the
# datasets already in your Hugging Face cache, HF_HUB_OFFLINE=1 reads them
# there in place.
# (examples/procedural_tier.hcl is the CPU demo on procedural stand-ins.)

variable "weights" {
  description = "The encoder's weights: a timm model.safetensors (with its config.json beside it) or a torchvision state_dict saved as safetensors. null starts from random weights."
  type        = string
  default     = null
}

variable "scale" {
  description = "\"full\" (GATE's protocol), \"cpu\" (a CPU-sized run) or \"test\"."
  default     = "full"
  validation {
    condition     = contains(["full", "cpu", "test"], var.scale)
    error_message = "scale must be \"full\", \"cpu\" or \"test\", not \"${var.scale}\"."
  }
}

variable "adapters" {
  description = "\"table3\" (GATE's task adapters and recipe as its code produced Table 3), \"gate\" (the same, its defects mended), both on the torch runtime, or \"compact\" (gatepipe's small heads, either runtime); null: the tier's default (table3)."
  type        = string
  default     = null
}

encoder "mine" {
  preset  = "resnet50"
  weights = var.weights
}

module "gate" {
  source   = "stdlib/tiers/small"
  encoder  = encoder.mine
  model    = "resnet50"
  scale    = var.scale
  adapters = var.adapters
}

output "measured" {
  value = module.gate.measured
}

output "not_run" {
  value = module.gate.not_run
}

output "table" {
  value = module.gate.table
}

output "position" {
  description = "Predicted place among the paper's 21 encoders and yours (1 = best)."
  value       = module.gate.position
}

output "report" {
  value = module.gate.report
}
