#!/usr/bin/env python3
"""Derive this example's inputs from the GATE paper matrix (stdlib/data):
pool_without_dino.csv is the matrix without the DINO encoder, and
dino_small_tier.csv holds DINO's published results on the small tier's
benchmarks only -- as if DINO were a new encoder evaluated on smallGATE.

    python3 examples/eevee_predict/make_inputs.py
"""
import csv
import os

here = os.path.dirname(os.path.abspath(__file__))
src = os.path.join(here, "..", "..", "stdlib", "data", "gate_table3.csv")
small = ["iwildcam", "ade20k", "clevr-math", "acdc", "imagenet1k", "mini", "cubirds", "cifar100"]
rows = list(csv.DictReader(open(src)))
fields = ["category", "benchmark", "metric", "model", "value", "higher_is_better"]
with open(os.path.join(here, "pool_without_dino.csv"), "w", newline="") as f:
    w = csv.DictWriter(f, fields)
    w.writeheader()
    w.writerows(r for r in rows if r["model"] != "dino")
with open(os.path.join(here, "dino_small_tier.csv"), "w", newline="") as f:
    w = csv.DictWriter(f, fields)
    w.writeheader()
    w.writerows(r for r in rows if r["model"] == "dino" and r["benchmark"] in small)
