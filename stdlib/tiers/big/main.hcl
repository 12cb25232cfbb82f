# bigGATE: the 21-benchmark tier the GATE paper publishes (Figure 4,
# "fig4c_small_gate_tier" in stdlib/data/gate_combinations.csv), most important first.
# A search block writes modules of the same shape for the tiers it finds.

output "benchmarks" {
  description = "The 21 benchmarks of bigGATE."
  value = [
    "winoground",
    "mini",
    "fungi",
    "omniglot",
    "cubirds",
    "clevr-math",
    "nyu",
    "places365",
    "chexpert",
    "ade20k",
    "flickr30k",
    "iwildcam",
    "coco-10k",
    "ucf",
    "acdc",
    "coco-164k",
    "nycc",
    "imagenet1k",
    "cifar100",
    "kinetics",
    "hmdb51",
  ]
}

output "source" {
  value = "GATE paper, Figure 4 (fig4c_small_gate_tier)"
}
