# baseGATE: the 15-benchmark tier the GATE paper publishes (Figure 4,
# "fig4b_small_gate_tier" in stdlib/data/gate_combinations.csv), most important first.
# A search block writes modules of the same shape for the tiers it finds.

output "benchmarks" {
  description = "The 15 benchmarks of baseGATE."
  value = [
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

output "source" {
  value = "GATE paper, Figure 4 (fig4b_small_gate_tier)"
}
