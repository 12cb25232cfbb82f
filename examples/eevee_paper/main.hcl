# Reproduce the GATE paper's EEVEE search on its own results matrix (21
# encoders x 31 benchmarks, 175 metrics; embedded in the stdlib) for the
# three tier sizes, and write a tier module for each.
#
#   gatepipe apply examples/eevee_paper
#
# The scoring defaults are the GATE authors' (grouped error, 20 splits,
# 64-unit GELU + LayerNorm meta-model); cityscapes was only ever a target
# in their pool, hence the exclusion.

variable "seed" {
  type    = number
  default = 0
}

variable "generations" {
  type    = number
  default = 10
}

search "eevee" {
  matrix      = "stdlib/data/gate_table3.csv"
  k           = [8, 15, 21]
  generations = var.generations
  seed        = var.seed
  exclude     = ["cityscapes"]
}

# Tables and figures of the paper's matrix with this search's EEVEE plots
# (single-benchmark predictiveness, member importance, top scores per k).
report "paper" {
  matrix = "stdlib/data/gate_table3.csv"
  paper  = true
  search = search.eevee.path
  title  = "GATE paper matrix with gatepipe's EEVEE search"
}

output "report" {
  value = report.paper.html
}

output "tiers" {
  description = "Generated tier modules, one directory per k."
  value       = search.eevee.tiers
}

output "small_tier" {
  value = search.eevee.best["8"]
}

output "scores" {
  value = search.eevee.scores
}
