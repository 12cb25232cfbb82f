# How much does EEVEE's choice of an 8-benchmark tier depend on the scoring
# seed (the seed of the 20 model splits and meta-model initialisations)?
# The search runs once per scoring seed on the GATE paper's matrix; the
# output lists each seed's best set, each benchmark's selection frequency
# (stability.csv) and a consensus tier: the 8 benchmarks chosen most often.
#
#   gatepipe apply examples/eevee_stability

search "tier8" {
  matrix        = "stdlib/data/gate_table3.csv"
  k             = [8]
  exclude       = ["cityscapes"]
  single        = false
  seed          = 0
  scoring_seeds = [1, 2, 3, 4]
}

output "consensus" {
  description = "The 8 benchmarks chosen most often over the five scoring seeds."
  value       = search.tier8.consensus["8"]
}

output "best_seed0" {
  value = search.tier8.best["8"]
}
