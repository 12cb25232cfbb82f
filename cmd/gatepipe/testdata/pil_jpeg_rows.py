"""The peer of BenchmarkJPEGStore's reads: one PIL process decoding a JPEG
store split's images (the sidecar's JPEGs at the stored size) into arrays,
as a PyTorch data pipeline over such files does (torchvision's
default_loader: Image.open(f).convert("RGB"), then the array).

With "normalise" after the files, each array is then made the tensor a
model takes as torchvision's transforms make it (ToTensor, then Normalize
with ImageNet's mean and std): the same output as the worker's loader, on
one thread (OMP_NUM_THREADS=1 in the peer's environment).

usage: pil_jpeg_rows.py SPLIT.safetensors SPLIT.jpeg [normalise]   prints "images cpu-seconds"
"""
import io
import json
import struct
import sys
import time

import numpy as np
from PIL import Image

with open(sys.argv[1], "rb") as f:
    (n,) = struct.unpack("<Q", f.read(8))
    head = json.loads(f.read(n))
    base = 8 + n
    h = head["xjpeg"]
    f.seek(base + h["data_offsets"][0])
    spans = np.frombuffer(f.read(h["data_offsets"][1] - h["data_offsets"][0]), dtype=np.int64).reshape(-1, 2)
with open(sys.argv[2], "rb") as f:
    data = f.read()
normalise = len(sys.argv) > 3 and sys.argv[3] == "normalise"
if normalise:
    from torchvision import transforms

    to_input = transforms.Compose([transforms.ToTensor(), transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
start = time.process_time()
for off, size in spans:
    img = Image.open(io.BytesIO(data[off:off + size])).convert("RGB")
    if normalise:
        to_input(img)
    else:
        np.asarray(img)
print(len(spans), time.process_time() - start)
