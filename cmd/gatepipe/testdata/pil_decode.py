"""The peer of BenchmarkImageStore: one PIL process decoding and resizing
the same files as a PyTorch data pipeline does (torchvision's
default_loader, then a bilinear resize to the store's size).

usage: pil_decode.py SIZE FILE...   prints "images seconds"
"""
import sys
import time

from PIL import Image

size = int(sys.argv[1])
files = sys.argv[2:]
start = time.perf_counter()
for f in files:
    with open(f, "rb") as fh:
        Image.open(fh).convert("RGB").resize((size, size), Image.BILINEAR)
print(len(files), time.perf_counter() - start)
