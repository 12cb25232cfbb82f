#!/usr/bin/env python3
"""Test accuracy of the GATE issue's reference convnet trained in PyTorch
on the real Fashion-MNIST, with the recipe of gatepipe's
BenchmarkTrainAccuracy.

conv(1->32,3x3)-relu-maxpool-conv(32->64,3x3)-relu-maxpool-fc(3136->128)-
relu-fc(10); AdamW (lr 1e-3, weight decay 0.01), batch 128 drawn uniformly
with replacement, pixels scaled to [0, 1]; accuracy (%) on the 10,000 test
images after --iters steps. Prints the accuracy.

  /usr/bin/python3 train/reference/accuracy_torch.py --dir /usr/share/datasets/fashion-mnist --iters 400 --seed 1
"""
import argparse
import gzip
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--iters", type=int, default=400)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    torch.manual_seed(a.seed)
    xtr, ytr = load(a.dir, "train")
    xte, yte = load(a.dir, "t10k")
    model = nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(3136, 128), nn.ReLU(), nn.Linear(128, 10))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    loss_fn = nn.CrossEntropyLoss()
    for _ in range(a.iters):
        idx = torch.randint(0, len(xtr), (a.batch,))
        opt.zero_grad(set_to_none=True)
        loss_fn(model(xtr[idx]), ytr[idx]).backward()
        opt.step()
    model.eval()
    with torch.no_grad():
        correct = sum((model(xte[i:i + 1000]).argmax(1) == yte[i:i + 1000]).sum().item() for i in range(0, len(xte), 1000))
    print(f"{100.0 * correct / len(xte):.2f}")


if __name__ == "__main__":
    main()
