"""Writes stdlib/data/torchvision_weights.csv: for every torchvision
classification weight set of an architecture gatepipe builds, the URL and
file torchvision downloads, and the evaluation transform it declares.

    /usr/bin/python3 scripts/make_torchvision_weights.py > stdlib/data/torchvision_weights.csv

Reads the installed torchvision (Debian's python3-torchvision) through its
own API: get_model_weights(name), each weight's url and transforms.
"""
import csv
import sys

import torchvision
from torchvision.models import get_model_weights
from torchvision.transforms import InterpolationMode

ARCHS = ["resnet18", "resnet34", "resnet50", "resnet101", "resnet152",
         "resnext50_32x4d", "resnext101_32x8d", "resnext101_64x4d", "wide_resnet50_2", "wide_resnet101_2",
         "convnext_tiny", "convnext_small", "convnext_base", "convnext_large",
         "vit_b_16", "vit_b_32", "vit_l_16", "vit_l_32", "vit_h_14"]

w = csv.writer(sys.stdout, lineterminator="\n")
w.writerow(["name", "url", "preset", "crop_size", "resize_size", "interpolation", "mean", "std", "torchvision"])
for arch in ARCHS:
    try:
        weights = get_model_weights(arch)
    except (ValueError, KeyError):
        continue
    for wt in weights:
        t = wt.transforms.keywords
        interp = t.get("interpolation", InterpolationMode.BILINEAR)
        mean = t.get("mean", (0.485, 0.456, 0.406))
        std = t.get("std", (0.229, 0.224, 0.225))
        w.writerow([arch + "." + wt.name, wt.url, arch, t["crop_size"], t.get("resize_size", 256),
                    interp.value, " ".join(str(m) for m in mean), " ".join(str(s) for s in std), torchvision.__version__])
