# Where would an encoder land among the GATE pool after running only the
# small tier? DINO is held out of the paper's matrix (pool_without_dino.csv)
# and predicted from its results on smallGATE's 8 benchmarks
# (dino_small_tier.csv); the inputs come from make_inputs.py. The block
# also validates the predictor by leave-one-model-out on the pool.
#
#   gatepipe apply examples/eevee_predict

module "small" {
  source = "stdlib/tiers/small"
}

predict "dino" {
  matrix   = "pool_without_dino.csv"
  tier     = module.small.benchmarks
  measured = "dino_small_tier.csv"
  exclude  = ["cityscapes"]
}

output "position" {
  description = "Predicted position of DINO among the 20 other encoders and itself (1 = best)."
  value       = "${predict.dino.position} of ${predict.dino.of}"
}

output "groups" {
  value = predict.dino.groups
}

# DINO's predicted results beside the pool's 20 encoders; predicted cells
# are marked apart from the measured small-tier ones.
report "dino" {
  matrix      = "pool_without_dino.csv"
  predictions = [predict.dino.path]
  title       = "DINO predicted from smallGATE, beside the GATE pool"
}

output "report" {
  value = report.dino.html
}
