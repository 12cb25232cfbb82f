# Predict an encoder's unrun results by completing the GATE results matrix
# (probabilistic matrix factorisation, Gibbs-sampled): DINO is held out of
# the paper's matrix and only its smallGATE results are given. Every other
# cell of its row is predicted with a predictive standard deviation,
# calibrated on held-out cells (SPEC: Matrix completion), shown as
# "value ±spread*" in the report. validate = true (the default) also
# scores the method on the pool itself by the paper's masked-ratio
# protocol against Global Mean and Mean of Means, and simulates active
# evaluation; the report shows both, and says where a baseline wins.
#
#   gatepipe apply examples/pmf_predict

predict "dino" {
  matrix   = "../eevee_predict/pool_without_dino.csv"
  measured = "../eevee_predict/dino_small_tier.csv"
  method   = "bpmf"
  columns  = "primary"
}

report "dino" {
  matrix      = "../eevee_predict/pool_without_dino.csv"
  predictions = [predict.dino.path]
  title       = "DINO predicted by matrix completion, beside the GATE pool"
}

output "report" {
  value = report.dino.html
}
