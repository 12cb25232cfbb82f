# smallGATE: the 8-benchmark tier the GATE paper publishes (Figure 4,
# "fig4a_small_gate_tier" in stdlib/data/gate_combinations.csv), most important first.
# A search block writes modules of the same shape for the tiers it finds.

output "benchmarks" {
  description = "The 8 benchmarks of smallGATE."
  value = [
    "iwildcam",
    "ade20k",
    "clevr-math",
    "acdc",
    "imagenet1k",
    "mini",
    "cubirds",
    "cifar100",
  ]
}

output "source" {
  value = "GATE paper, Figure 4 (fig4a_small_gate_tier)"
}
