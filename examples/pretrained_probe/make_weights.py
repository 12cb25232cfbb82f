#!/usr/bin/env python3
"""Writes a torchvision ResNet-18 as model files a hub would give you.

Usage: make_weights.py OUTDIR

OUTDIR/resnet18.safetensors holds the model's state_dict under
torchvision's names, and OUTDIR/config.json a timm-style pretrained_cfg
(input size, interpolation, crop_pct, mean, std) that gatepipe reads as the
encoder's preprocessing. With no model hub reachable here, the weights are
torchvision's initialisation from a fixed seed; put a real checkpoint (for
instance timm's resnet18.a1_in1k model.safetensors and config.json) in
their place and the pipeline runs unchanged.

Needs Debian's python3-torchvision.
"""
import json
import os
import struct
import sys

import torch
import torchvision


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    model = torchvision.models.resnet18(weights=None)
    header, blobs, off = {"__metadata__": {"format": "pt", "source": "torchvision.models.resnet18, seed 0"}}, [], 0
    for name, t in sorted(model.state_dict().items()):
        if name.endswith("num_batches_tracked"):
            continue
        data = t.detach().contiguous().to(torch.float32).numpy().tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [off, off + len(data)]}
        blobs.append(data)
        off += len(data)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(os.path.join(out, "resnet18.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)
    # A CPU-sized input (64x64 instead of 224x224) keeps the demo short;
    # the transform is timm's eval transform all the same.
    cfg = {"architecture": "resnet18", "num_classes": 1000, "pretrained_cfg": {
        "input_size": [3, 64, 64], "interpolation": "bilinear", "crop_pct": 0.875,
        "mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225]}}
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)


if __name__ == "__main__":
    main()
