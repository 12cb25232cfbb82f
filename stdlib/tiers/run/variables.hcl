# The inputs of stdlib/tiers/run (main.hcl says what the module does).

variable "benchmarks" {
  description = "The tier's benchmark IDs, as in the GATE matrix (stdlib/data/gate_table3.csv)."
  type        = list(string)
}

variable "tier_name" {
  description = "The tier's name in the report."
  default     = "Tier"
}

variable "encoder" {
  description = "The encoder evaluated: an encoder block (encoder.mine). null plans nothing."
  type        = any
  default     = null
}

variable "model" {
  description = "The encoder's name in the results matrix, the prediction and the report."
  default     = "mine"
}

variable "scale" {
  description = <<-EOT
    "full" (GATE's protocol: every example, 224x224 images), "cpu" (a CPU-sized
    run: 2,000/500/1,000 examples, 64x64, 300 steps), "test" (tiny sizes, for
    checks) or "smoke" (the test sizes on gatepipe's own fixtures: -mirror
    smoke, which eval -scale smoke starts), or an object overriding any of full's fields: max_train, max_val,
    max_test, image_size, iterations, batch_size, validate_every, top_k, ways,
    shots, queries.
  EOT
  type        = any
  default     = "full"
  validation {
    condition     = contains(["full", "cpu", "test", "smoke"], try(tostring(var.scale), "")) || can(keys(var.scale))
    error_message = "scale must be \"full\", \"cpu\", \"test\", \"smoke\" or an object overriding full's fields (stdlib/tiers/run), not ${try(jsonencode(var.scale), "that")}."
  }
}

variable "protocol" {
  description = "\"finetune\" (GATE's: the encoder is trained with the task adapter) or \"linear_probe\" (the encoder is frozen; only the adapter learns)."
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
  description = "\"auto\" (the torch runtime, one GPU per node, where the machine has GPUs and python's torch sees them; else gatepipe's Go runtime on the CPUs), \"builtin\" (the Go runtime, CPU) or \"torch\" (every benchmark's train block on the torch runtime: the encoder itself in PyTorch, on a GPU with gpus = 1; with torch_arch set, every benchmark trains that model instead)."
  default     = "auto"
  validation {
    condition     = contains(["auto", "builtin", "torch"], var.trainer)
    error_message = "trainer must be \"auto\", \"builtin\" or \"torch\", not \"${var.trainer}\"."
  }
}

variable "torch_arch" {
  description = "With trainer = \"torch\": a torchvision name (resnet18, convnext_tiny, ...), timm:NAME or convnet, trained on every benchmark on the torch runtime instead of the encoder, from the encoder's weights (in the model's own names) where it has some (default: null, the encoder itself)."
  type        = string
  default     = null
}

variable "python" {
  description = "The Python with PyTorch for the torch runtime (and the one auto asks) (null: the pipeline's, else $GATEPIPE_PYTHON, else python3)."
  type        = string
  default     = null
}

variable "gpus" {
  description = "GPUs per train node (0 or 1; null: the runtime's choice, one GPU where auto picks the torch runtime, none for builtin and torch)."
  type        = number
  default     = null
  validation {
    condition     = var.gpus == null || var.gpus == 0 || var.gpus == 1
    error_message = "gpus is the GPUs of each train node: 0 (CPU) or 1 (one GPU per node; nodes run on every GPU at once)."
  }
}

variable "cpus" {
  description = "CPU cores per train node (null: the runtime's choice, one on the CPUs, the machine's cores shared among its GPUs where auto picks one GPU per node)."
  type        = number
  default     = null
}

variable "split_seed" {
  description = "Seed of every split gatepipe draws."
  default     = 0
}

variable "seed" {
  description = "Seed of training (initialisation and batches)."
  default     = 0
}

variable "seeds" {
  description = "Seeds to train each benchmark with (each cached on its own); results show mean ± std (n). Empty: seed alone."
  type        = list(number)
  default     = []
}
