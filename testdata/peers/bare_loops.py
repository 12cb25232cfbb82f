"""Bare PyTorch loops, the peers of the torch runtime's benchmarks: what a
PyTorch user writes for the same work on the same store.

  bare_loops.py features STORE ARCH BATCH [PRECISION]
                                            frozen pooled features, inference_mode,
                                            PRECISION fp32, tf32 or bf16 (autocast;
                                            the default on a GPU)
  bare_loops.py train STORE ARCH BATCH ITERS CLASSES  AdamW fine-tuning steps
  bare_loops.py feed STORE BATCH PASSES      no model: the split memory-mapped,
                                            each batch to torch, to float32 and
                                            normalised in place, one thread
  bare_loops.py features-resident ...       as features and train, with the
  bare_loops.py train-resident ...          whole split on the GPU (uint8)
                                            before the clock starts: the
                                            model's own speed, no feed at all

ARCH is a torchvision model (resnet50, resnet18, vit_b_16). The store's
split "train" (uint8 images) is read with numpy from its safetensors file.
Prints one JSON line: images, seconds, images_per_sec, device, threads.

Each PRECISION is the same arithmetic as the runtime's of that name: fp32
is full float32 (TF32 off; PyTorch's default lets cuDNN's convolutions use
TF32, which is the tf32 setting here), tf32 lets matrix products and
convolutions use TF32, bf16 autocasts with TF32 off.
"""
import json
import struct
import sys
import time

import numpy as np
import torch
import torchvision

cuda = torch.cuda.is_available()
dev = torch.device("cuda" if cuda else "cpu")


def store_x(path):
    with open(path + "/train.safetensors", "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        h = json.loads(f.read(n))
    b, e = h["x"]["data_offsets"]
    x = np.memmap(path + "/train.safetensors", dtype=np.uint8, mode="r", offset=8 + n + b, shape=tuple(h["x"]["shape"]))
    return torch.from_numpy(np.ascontiguousarray(x))


def feed(store, batch, passes):
    """The bare memmap loop: batches of the memory-mapped split as
    normalised float32, after a first pass that warms the page cache."""
    with open(store + "/train.safetensors", "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        h = json.loads(f.read(n))
    b, e = h["x"]["data_offsets"]
    x = np.memmap(store + "/train.safetensors", dtype=np.uint8, mode="r", offset=8 + n + b, shape=tuple(h["x"]["shape"]))
    count, t = 0, None
    for p in range(passes + 1):
        if p == 1:
            t = time.time()
        for i in range(0, len(x), batch):
            xb = torch.from_numpy(np.asarray(x[i:i + batch])).to(torch.float32)
            xb.mul_(1 / 255).sub_(0.45).div_(0.225)
            if p > 0:
                count += xb.shape[0]
    return count, time.time() - t


def model(arch, classes):
    """The model, its weights channels last where it is convolutional:
    PyTorch's advice for convolutions on GPUs and on CPUs (oneDNN) alike."""
    m = getattr(torchvision.models, arch)(num_classes=classes)
    m = m.to(dev)
    if not arch.startswith("vit"):
        m = m.to(memory_format=torch.channels_last)
    return m


def prep(xb, arch):
    x = xb.to(dev, non_blocking=True).float().div_(255)
    x = (x - 0.45) / 0.225
    if not arch.startswith("vit"):
        x = x.contiguous(memory_format=torch.channels_last)
    return x


PRECISION = "bf16" if cuda else "fp32"


def autocast():
    if PRECISION == "bf16":
        return torch.autocast(dev.type, dtype=torch.bfloat16)
    return torch.autocast(dev.type, enabled=False)


def features(store, arch, batch, resident=False):
    x = store_x(store)
    if resident:
        x = x.to(dev)
    if len(x) <= batch:
        raise SystemExit("features times the batches after the first: give more than %d images" % batch)
    m = model(arch, 1000)
    if hasattr(m, "fc"):
        m.fc = torch.nn.Identity()
    else:
        m.heads = torch.nn.Identity()
    m.eval()
    t = None
    with torch.inference_mode():
        for i in range(0, len(x), batch):
            if i == batch:  # the first batch is warm-up, as the runtime counts it
                if cuda:
                    torch.cuda.synchronize()
                t = time.time()
            with autocast():
                m(prep(x[i:i + batch], arch)).float().cpu()
        if cuda:
            torch.cuda.synchronize()
    return len(x) - batch, time.time() - t


def train(store, arch, batch, iters, classes, resident=False):
    x = store_x(store)
    if resident:
        x = x.to(dev)
    m = model(arch, classes)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3, weight_decay=0.01)
    g = torch.Generator().manual_seed(0)
    idx = torch.randint(0, len(x), (iters + 1, batch), generator=g)
    y = torch.randint(0, classes, (iters + 1, batch), generator=g)
    m.train()
    t = None
    for it in range(iters + 1):
        if it == 1:  # the first step is warm-up
            if cuda:
                torch.cuda.synchronize()
            t = time.time()
        with autocast():
            loss = torch.nn.functional.cross_entropy(m(prep(x[idx[it].to(x.device)], arch)).float(), y[it].to(dev))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    if cuda:
        torch.cuda.synchronize()
    return iters * batch, time.time() - t


if __name__ == "__main__":
    job = sys.argv[1]
    resident = job.endswith("-resident")
    job = job.removesuffix("-resident")
    if job == "features" and len(sys.argv) > 5:
        PRECISION = sys.argv[5]
    if cuda:
        torch.backends.cuda.matmul.allow_tf32 = PRECISION == "tf32"
        torch.backends.cudnn.allow_tf32 = PRECISION == "tf32"
        torch.backends.cudnn.benchmark = True
    if job == "features":
        n, s = features(sys.argv[2], sys.argv[3], int(sys.argv[4]), resident)
    elif job == "feed":
        import warnings
        warnings.simplefilter("ignore")  # torch.from_numpy on a read-only map
        n, s = feed(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        n, s = train(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]), resident)
    print(json.dumps({"images": n, "seconds": s, "images_per_sec": n / s, "device": str(dev), "threads": torch.get_num_threads()}))
