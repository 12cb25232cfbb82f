#!/usr/bin/env python3
"""Regenerates the PyTorch parity fixtures for gatepipe's built-in encoders.

For each architecture (mlp, convnet, resnet, vit) this writes
<arch>.safetensors holding the model's state_dict under gatepipe's names
(PyTorch conventions: torchvision for the ResNet, timm for the ViT) plus
two extra tensors, "parity.input" [2, 3, 8, 8] and "parity.logits" [2, 5],
the eval-mode output of the PyTorch model. The Go test (parity_test.go)
loads the file, runs the same input through the gorgonia graph and
compares within 1e-4.

Needs only torch (Debian: python3-torch); safetensors is written by hand.
Run: /usr/bin/python3 train/testdata/parity/make_parity.py
"""
import json
import math
import os
import struct

import torch
from torch import nn
import torch.nn.functional as F

CLASSES = 5
HERE = os.path.dirname(os.path.abspath(__file__))


class MLP(nn.Module):
    def __init__(self, inp, hidden):
        super().__init__()
        self.fcs = nn.ModuleList()
        for h in hidden:
            self.fcs.append(nn.Linear(inp, h))
            inp = h
        self.out = inp

    def forward(self, x):
        x = x.flatten(1)
        for fc in self.fcs:
            x = F.relu(fc(x))
        return x


class ConvNet(nn.Module):
    def __init__(self, cin, hw, channels, hidden):
        super().__init__()
        self.convs = nn.ModuleList()
        for c in channels:
            self.convs.append(nn.Conv2d(cin, c, 3, padding=1))
            cin, hw = c, hw // 2
        self.fcs = nn.ModuleList()
        inp = cin * hw * hw
        for h in hidden:
            self.fcs.append(nn.Linear(inp, h))
            inp = h
        self.out = inp

    def forward(self, x):
        for conv in self.convs:
            x = F.max_pool2d(F.relu(conv(x)), 2)
        x = x.flatten(1)
        for fc in self.fcs:
            x = F.relu(fc(x))
        return x


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        short = x if self.downsample is None else self.downsample(x)
        return F.relu(out + short)


class ResNet(nn.Module):
    def __init__(self, cin, channels, blocks):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, channels[0], 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels[0])
        c = channels[0]
        for s, (width, n) in enumerate(zip(channels, blocks)):
            layers = []
            for j in range(n):
                layers.append(BasicBlock(c, width, 2 if s > 0 and j == 0 else 1))
                c = width
            setattr(self, f"layer{s + 1}", nn.Sequential(*layers))
        self.stages = len(channels)
        self.out = c

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        for s in range(self.stages):
            x = getattr(self, f"layer{s + 1}")(x)
        return x.mean(dim=(2, 3))


class Attention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        b, n, d = x.shape
        qkv = self.qkv(x).reshape(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        att = (q @ k.transpose(-2, -1)) / math.sqrt(d // self.heads)
        x = att.softmax(dim=-1) @ v
        return self.proj(x.transpose(1, 2).reshape(b, n, d))


class Mlp(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x), approximate="tanh"))


class Block(nn.Module):
    def __init__(self, dim, heads, ratio):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=1e-6)
        self.attn = Attention(dim, heads)
        self.norm2 = nn.LayerNorm(dim, eps=1e-6)
        self.mlp = Mlp(dim, dim * ratio)

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class PatchEmbed(nn.Module):
    def __init__(self, cin, dim, patch):
        super().__init__()
        self.proj = nn.Conv2d(cin, dim, patch, patch)

    def forward(self, x):
        return self.proj(x).flatten(2).transpose(1, 2)


class ViT(nn.Module):
    def __init__(self, cin, hw, patch, dim, depth, heads, ratio):
        super().__init__()
        self.patch_embed = PatchEmbed(cin, dim, patch)
        n = (hw // patch) ** 2
        self.cls_token = nn.Parameter(torch.randn(1, 1, dim) * 0.02)
        self.pos_embed = nn.Parameter(torch.randn(1, n + 1, dim) * 0.02)
        self.blocks = nn.ModuleList([Block(dim, heads, ratio) for _ in range(depth)])
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.out = dim

    def forward(self, x):
        x = self.patch_embed(x)
        x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1) + self.pos_embed
        for blk in self.blocks:
            x = blk(x)
        return self.norm(x)[:, 0]


class Classifier(nn.Module):
    def __init__(self, encoder):
        super().__init__()
        self.encoder = encoder
        self.head = nn.Linear(encoder.out, CLASSES)

    def forward(self, x):
        return self.head(self.encoder(x))


def perturb(model, gen):
    """Makes normalisation layers and embeddings non-trivial."""
    with torch.no_grad():
        for name, t in model.state_dict().items():
            if name.endswith("num_batches_tracked"):
                continue
            if "bn" in name or "downsample.1" in name or "norm" in name:
                if name.endswith("running_var"):
                    t.copy_(0.5 + torch.rand(t.shape, generator=gen))
                elif name.endswith("weight"):
                    t.copy_(1 + 0.3 * torch.randn(t.shape, generator=gen))
                else:
                    t.copy_(0.2 * torch.randn(t.shape, generator=gen))
            elif name.endswith(("pos_embed", "cls_token")):
                t.copy_(0.5 * torch.randn(t.shape, generator=gen))


def write_safetensors(path, tensors, metadata):
    header, blobs, off = {"__metadata__": metadata}, [], 0
    for name in sorted(tensors):
        data = tensors[name].detach().contiguous().to(torch.float32).numpy().tobytes()
        header[name] = {"dtype": "F32", "shape": list(tensors[name].shape), "data_offsets": [off, off + len(data)]}
        blobs.append(data)
        off += len(data)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


MODELS = {
    "mlp": (lambda: MLP(3 * 8 * 8, [16, 8]), {"arch": "mlp", "hidden": [16, 8]}),
    "convnet": (lambda: ConvNet(3, 8, [4, 6], [12]), {"arch": "convnet", "channels": [4, 6], "hidden": [12]}),
    "resnet": (lambda: ResNet(3, [4, 8], [1, 2]), {"arch": "resnet", "channels": [4, 8], "blocks": [1, 2]}),
    "vit": (lambda: ViT(3, 8, 4, 16, 2, 2, 2), {"arch": "vit", "patch": 4, "dim": 16, "depth": 2, "heads": 2, "mlp_ratio": 2}),
}


def main():
    torch.set_num_threads(1)
    for i, (arch, (make, spec)) in enumerate(MODELS.items()):
        torch.manual_seed(100 + i)
        gen = torch.Generator().manual_seed(200 + i)
        model = Classifier(make())
        perturb(model, gen)
        model.eval()
        x = torch.randn(2, 3, 8, 8, generator=gen)
        with torch.no_grad():
            logits = model(x)
        tensors = {k: v for k, v in model.state_dict().items() if not k.endswith("num_batches_tracked")}
        tensors["parity.input"] = x
        tensors["parity.logits"] = logits
        meta = {"spec": json.dumps(spec), "classes": str(CLASSES), "torch": torch.__version__}
        write_safetensors(os.path.join(HERE, arch + ".safetensors"), tensors, meta)
        print(arch, sum(v.numel() for k, v in tensors.items() if not k.startswith("parity.")), "values")


if __name__ == "__main__":
    main()
