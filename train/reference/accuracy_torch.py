#!/usr/bin/env python3
"""Test accuracy of the GATE issue's reference convnet trained in PyTorch
on the real Fashion-MNIST, with the recipe of gatepipe's
BenchmarkTrainAccuracy.

conv(1->32,3x3)-relu-maxpool-conv(32->64,3x3)-relu-maxpool-fc(3136->128)-
relu-fc(10); AdamW (lr 1e-3, weight decay 0.01), batch 128 drawn uniformly
with replacement, pixels scaled to [0, 1]; accuracy (%) on the 10,000 test
images after --iters steps. Prints the accuracy.

With --start FILE (a safetensors file gatepipe's benchmark writes) the
model starts from FILE's weights, under gatepipe's names, and takes its
batches from FILE's "batches" [iters, batch] example indices: the run
gatepipe makes with the same seed, differing only in float rounding.

  /usr/bin/python3 train/reference/accuracy_torch.py --dir /usr/share/datasets/fashion-mnist --iters 400 --seed 1
"""
import argparse
import gzip
import json
import os
import struct

import numpy as np
import torch
from torch import nn


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def load(d, split):
    x = read_idx(os.path.join(d, f"{split}-images-idx3-ubyte.gz")).astype(np.float32) / 255.0
    y = read_idx(os.path.join(d, f"{split}-labels-idx1-ubyte.gz")).astype(np.int64)
    return torch.from_numpy(x).unsqueeze(1), torch.from_numpy(y)


class ConvNet(nn.Module):
    """The reference convnet under gatepipe's parameter names."""

    def __init__(self):
        super().__init__()
        self.encoder = nn.Module()
        self.encoder.convs = nn.ModuleList([nn.Conv2d(1, 32, 3, padding=1), nn.Conv2d(32, 64, 3, padding=1)])
        self.encoder.fcs = nn.ModuleList([nn.Linear(3136, 128)])
        self.head = nn.Linear(128, 10)

    def forward(self, x):
        for conv in self.encoder.convs:
            x = nn.functional.max_pool2d(nn.functional.relu(conv(x)), 2)
        x = x.flatten(1)
        for fc in self.encoder.fcs:
            x = nn.functional.relu(fc(x))
        return self.head(x)


def read_safetensors(path):
    """Reads the F32 and I64 tensors of a safetensors file."""
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        lo, hi = t["data_offsets"]
        dtype = {"F32": np.float32, "I64": np.int64}[t["dtype"]]
        out[name] = torch.from_numpy(np.frombuffer(data, dtype=dtype, count=(hi - lo) // np.dtype(dtype).itemsize,
                                                   offset=8 + n + lo).reshape(t["shape"]).copy())
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--iters", type=int, default=400)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--start", help="initial weights and batch indices (safetensors) from gatepipe")
    a = ap.parse_args()
    torch.manual_seed(a.seed)
    xtr, ytr = load(a.dir, "train")
    xte, yte = load(a.dir, "t10k")
    model = ConvNet()
    batches = None
    if a.start:
        start = read_safetensors(a.start)
        batches = start.pop("batches")
        model.load_state_dict(start)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    loss_fn = nn.CrossEntropyLoss()
    for s in range(a.iters):
        idx = batches[s] if batches is not None else torch.randint(0, len(xtr), (a.batch,))
        opt.zero_grad(set_to_none=True)
        loss_fn(model(xtr[idx]), ytr[idx]).backward()
        opt.step()
    model.eval()
    with torch.no_grad():
        correct = sum((model(xte[i:i + 1000]).argmax(1) == yte[i:i + 1000]).sum().item() for i in range(0, len(xte), 1000))
    print(f"{100.0 * correct / len(xte):.2f}")


if __name__ == "__main__":
    main()
