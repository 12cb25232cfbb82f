#!/usr/bin/env python3
"""Training throughput of the GATE issue's reference convnet in PyTorch.

conv(1->32,3x3)-relu-maxpool-conv(32->64,3x3)-relu-maxpool-fc(3136->128)-
relu-fc(10), batch 128, float32, AdamW, channels last, on random 28x28
inputs: the same model and step as gatepipe's BenchmarkTrainThroughput.
Prints images/s.

  /usr/bin/python3 train/reference/throughput_torch.py --threads 1 --iters 30
"""
import argparse
import time

import torch
from torch import nn


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--batch", type=int, default=128)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(3136, 128), nn.ReLU(), nn.Linear(128, 10))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    # Channels last, as PyTorch's CPU performance guide advises for
    # convolutions (oneDNN): 1.2-1.3x this model's training speed on the
    # 2-core EPYC.
    model = model.to(memory_format=torch.channels_last)
    x = torch.randn(a.batch, 1, 28, 28).contiguous(memory_format=torch.channels_last)
    y = torch.randint(0, 10, (a.batch,))
    loss_fn = nn.CrossEntropyLoss()

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()

    for _ in range(3):
        step()
    t = time.perf_counter()
    for _ in range(a.iters):
        step()
    print(f"{a.iters * a.batch / (time.perf_counter() - t):.1f}")


if __name__ == "__main__":
    main()
