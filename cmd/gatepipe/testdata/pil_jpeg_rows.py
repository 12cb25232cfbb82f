"""The peer of BenchmarkJPEGStore's reads: one PIL process decoding a JPEG
store split's images (the sidecar's JPEGs at the stored size) into arrays,
as a PyTorch data pipeline over such files does (torchvision's
default_loader: Image.open(f).convert("RGB"), then the array).

usage: pil_jpeg_rows.py SPLIT.safetensors SPLIT.jpeg   prints "images cpu-seconds"
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
start = time.process_time()
for off, size in spans:
    np.asarray(Image.open(io.BytesIO(data[off:off + size])).convert("RGB"))
print(len(spans), time.process_time() - start)
