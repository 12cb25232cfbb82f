# The demo pipeline: fetch Fashion-MNIST once into the cache (from Debian's
# dataset-fashion-mnist package), build seeded train/val/test splits, and
# summarise them with an external command. Run it twice: the second apply
# finds everything cached.
#
#   gatepipe apply examples/fashion_mnist

gatepipe {
  parallelism = 2
}

variable "split_seed" {
  description = "Seed of the train/validation split."
  type        = number
  default     = 0
}

module "fashion" {
  source     = "stdlib/datasets/fashion_mnist"
  split_seed = var.split_seed
}

# An external program consuming a dataset artifact: any language works; the
# output directory arrives as self.out_dir (and $GATEPIPE_OUT_DIR).
command "summary" {
  run     = ["python3", "summarise.py", module.fashion.dataset.path, "${self.out_dir}/summary.json"]
  inputs  = ["summarise.py"]
  outputs = { summary = "summary.json" }
}

output "fashion_splits" {
  value = module.fashion.dataset.splits
}

output "summary" {
  value = command.summary.outputs["summary"]
}

# The run ends with a report: the GATE paper's results matrix, its tiers and
# figures, written as a self-contained HTML page. (Once training blocks feed
# a results matrix, the same block reports on the run's own results.)
report "gate" {
  matrix = "stdlib/data/gate_table3.csv"
  paper  = true
  title  = "GATE results matrix (paper)"
}

output "report" {
  value = report.gate.html
}
