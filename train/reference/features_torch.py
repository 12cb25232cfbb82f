#!/usr/bin/env python3
"""Frozen feature extraction throughput of a torchvision model in PyTorch.

The model in eval mode under torch.inference_mode, its classifier replaced
by the identity (pooled features, as gatepipe's features block computes),
convolutional models and their input channels last, on random [batch, 3,
224, 224] inputs; one warm-up batch, then --batches
timed. Prints "images/s peak_rss_MB". The same work as gatepipe's
BenchmarkFrozenFeatures; run best-configured (internal/peer.TorchEnv).

  /usr/bin/python3 train/reference/features_torch.py --model resnet50 --threads 1
"""
import argparse
import time

import torch
import torchvision


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--batches", type=int, default=1)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    model = getattr(torchvision.models, a.model)(weights=None)
    if hasattr(model, "fc"):
        model.fc = torch.nn.Identity()
    elif hasattr(model, "heads"):
        model.heads = torch.nn.Identity()
    else:
        model.classifier[-1] = torch.nn.Identity()
    model.eval()
    x = torch.randn(a.batch, 3, 224, 224)
    if not a.model.startswith("vit"):
        # Convolutions channels last, as PyTorch's CPU performance guide
        # advises for oneDNN: 1.15-1.2x ResNet-50's speed on the 2-core
        # EPYC, in less memory.
        model = model.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    with torch.inference_mode():
        model(x)
        start = time.perf_counter()
        for _ in range(a.batches):
            model(x)
        took = time.perf_counter() - start
    # VmHWM, not getrusage's ru_maxrss: Linux carries a parent's maxrss
    # over fork and exec, so a child of a large process reports its parent's.
    rss = 0.0
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                rss = int(line.split()[1]) / 1024
    print(f"{a.batch * a.batches / took:.3f} {rss:.0f}")


if __name__ == "__main__":
    main()
