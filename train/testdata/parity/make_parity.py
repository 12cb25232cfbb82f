#!/usr/bin/env python3
"""Regenerates the PyTorch parity fixtures for gatepipe's built-in encoders.

For each small model (mlp, convnet, resnet, the bottleneck ResNeXt with
the ImageNet stem, ConvNeXt v1 and v2, and ViTs in timm's, DeiT3's and
CLIP's variants) this writes <name>.safetensors holding the model's
state_dict under gatepipe's names (PyTorch conventions: torchvision for the
ResNet, timm for ConvNeXt and the ViT) plus two extra tensors,
"parity.input" [2, 3, H, W] and "parity.logits" [2, 5], the eval-mode
output of the PyTorch model. The Go test (parity_test.go)
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


class Bottleneck(nn.Module):
    def __init__(self, cin, planes, stride, groups, wpg):
        super().__init__()
        width, cout = planes * wpg // 64 * groups, planes * 4
        self.conv1 = nn.Conv2d(cin, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride, 1, groups=groups, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, cout, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
        self.out = cout

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = F.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        short = x if self.downsample is None else self.downsample(x)
        return F.relu(out + short)


class ResNet(nn.Module):
    def __init__(self, cin, channels, blocks, imagenet=False, bottleneck=False, groups=1, wpg=64):
        super().__init__()
        if imagenet:
            self.conv1 = nn.Conv2d(cin, channels[0], 7, 2, 3, bias=False)
        else:
            self.conv1 = nn.Conv2d(cin, channels[0], 3, 1, 1, bias=False)
        self.imagenet = imagenet
        self.bn1 = nn.BatchNorm2d(channels[0])
        c = channels[0]
        for s, (width, n) in enumerate(zip(channels, blocks)):
            layers = []
            for j in range(n):
                stride = 2 if s > 0 and j == 0 else 1
                if bottleneck:
                    layers.append(Bottleneck(c, width, stride, groups, wpg))
                    c = layers[-1].out
                else:
                    layers.append(BasicBlock(c, width, stride))
                    c = width
            setattr(self, f"layer{s + 1}", nn.Sequential(*layers))
        self.stages = len(channels)
        self.out = c

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        if self.imagenet:
            x = F.max_pool2d(x, 3, 2, 1)
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


def activation(x, act):
    if act == "gelu_tanh":
        return F.gelu(x, approximate="tanh")
    if act == "quick_gelu":
        return x * torch.sigmoid(1.702 * x)
    return F.gelu(x)


class Mlp(nn.Module):
    def __init__(self, dim, hidden, act="gelu"):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)
        self.act = act

    def forward(self, x):
        return self.fc2(activation(self.fc1(x), self.act))


class LayerScale(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.gamma = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * self.gamma


class Block(nn.Module):
    def __init__(self, dim, heads, ratio, act="gelu", eps=1e-6, layer_scale=False):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=eps)
        self.attn = Attention(dim, heads)
        self.norm2 = nn.LayerNorm(dim, eps=eps)
        self.mlp = Mlp(dim, dim * ratio, act)
        self.ls1 = LayerScale(dim) if layer_scale else nn.Identity()
        self.ls2 = LayerScale(dim) if layer_scale else nn.Identity()

    def forward(self, x):
        x = x + self.ls1(self.attn(self.norm1(x)))
        return x + self.ls2(self.mlp(self.norm2(x)))


class PatchEmbed(nn.Module):
    def __init__(self, cin, dim, patch, bias=True):
        super().__init__()
        self.proj = nn.Conv2d(cin, dim, patch, patch, bias=bias)

    def forward(self, x):
        return self.proj(x).flatten(2).transpose(1, 2)


class ViT(nn.Module):
    """timm's VisionTransformer, with the options gatepipe supports."""

    def __init__(self, cin, hw, patch, dim, depth, heads, ratio, act="gelu", eps=1e-6, norm_pre=False,
                 patch_bias=True, layer_scale=False, no_embed_class=False, pool="token"):
        super().__init__()
        self.patch_embed = PatchEmbed(cin, dim, patch, patch_bias)
        n = (hw // patch) ** 2
        self.no_embed_class, self.pool = no_embed_class, pool
        self.cls_token = nn.Parameter(torch.randn(1, 1, dim) * 0.02)
        self.pos_embed = nn.Parameter(torch.randn(1, n if no_embed_class else n + 1, dim) * 0.02)
        if norm_pre:
            self.norm_pre = nn.LayerNorm(dim, eps=eps)
        self.blocks = nn.ModuleList([Block(dim, heads, ratio, act, eps, layer_scale) for _ in range(depth)])
        if pool == "avg":
            self.fc_norm = nn.LayerNorm(dim, eps=eps)
        else:
            self.norm = nn.LayerNorm(dim, eps=eps)
        self.out = dim

    def forward(self, x):
        x = self.patch_embed(x)
        cls = self.cls_token.expand(x.shape[0], -1, -1)
        if self.no_embed_class:
            x = torch.cat([cls, x + self.pos_embed], dim=1)
        else:
            x = torch.cat([cls, x], dim=1) + self.pos_embed
        if hasattr(self, "norm_pre"):
            x = self.norm_pre(x)
        for blk in self.blocks:
            x = blk(x)
        if self.pool == "avg":
            return self.fc_norm(x[:, 1:].mean(dim=1))
        return self.norm(x)[:, 0]


class GRN(nn.Module):
    """ConvNeXt-V2's global response norm, channels last (timm)."""

    def __init__(self, dim):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        gx = x.norm(p=2, dim=(1, 2), keepdim=True)
        nx = gx / (gx.mean(dim=-1, keepdim=True) + 1e-6)
        return x + torch.addcmul(self.bias, self.weight, x * nx)


class LayerNorm2d(nn.LayerNorm):
    def forward(self, x):
        return F.layer_norm(x.permute(0, 2, 3, 1), self.normalized_shape, self.weight, self.bias, self.eps).permute(0, 3, 1, 2)


class ConvNeXtMlp(nn.Module):
    def __init__(self, dim, grn):
        super().__init__()
        self.fc1 = nn.Linear(dim, 4 * dim)
        if grn:
            self.grn = GRN(4 * dim)
        self.fc2 = nn.Linear(4 * dim, dim)

    def forward(self, x):
        x = F.gelu(self.fc1(x))
        if hasattr(self, "grn"):
            x = self.grn(x)
        return self.fc2(x)


class ConvNeXtBlock(nn.Module):
    def __init__(self, dim, v2):
        super().__init__()
        self.conv_dw = nn.Conv2d(dim, dim, 7, padding=3, groups=dim)
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.mlp = ConvNeXtMlp(dim, v2)
        if not v2:
            self.gamma = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        y = self.conv_dw(x).permute(0, 2, 3, 1)
        y = self.mlp(self.norm(y))
        if hasattr(self, "gamma"):
            y = y * self.gamma
        return x + y.permute(0, 3, 1, 2)


class ConvNeXtStage(nn.Module):
    def __init__(self, cin, dim, depth, v2, downsample):
        super().__init__()
        if downsample:
            self.downsample = nn.Sequential(LayerNorm2d(cin, eps=1e-6), nn.Conv2d(cin, dim, 2, 2))
        self.blocks = nn.Sequential(*[ConvNeXtBlock(dim, v2) for _ in range(depth)])

    def forward(self, x):
        if hasattr(self, "downsample"):
            x = self.downsample(x)
        return self.blocks(x)


class ConvNeXt(nn.Module):
    """timm's ConvNeXt; the pooled features pass through head.norm."""

    def __init__(self, cin, dims, depths, v2=False):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(cin, dims[0], 4, 4), LayerNorm2d(dims[0], eps=1e-6))
        c, stages = dims[0], []
        for s, (d, n) in enumerate(zip(dims, depths)):
            stages.append(ConvNeXtStage(c, d, n, v2, s > 0))
            c = d
        self.stages = nn.Sequential(*stages)
        self.head = nn.Module()
        self.head.norm = nn.LayerNorm(c, eps=1e-6)
        self.out = c

    def forward(self, x):
        x = self.stages(self.stem(x))
        return self.head.norm(x.mean(dim=(2, 3)))


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
            elif name.endswith(("pos_embed", "cls_token", "gamma", "grn.weight", "grn.bias")):
                t.copy_(0.5 * torch.randn(t.shape, generator=gen))


def write_safetensors(path, tensors, metadata, dtype=torch.float32):
    """Writes tensors (parity.* always as F32, the rest as dtype: F32, BF16
    or F16) and metadata as a safetensors file."""
    names = {torch.float32: "F32", torch.bfloat16: "BF16", torch.float16: "F16"}
    header, blobs, off = {"__metadata__": metadata}, [], 0
    for name in sorted(tensors):
        d = torch.float32 if name.startswith("parity.") else dtype
        t = tensors[name].detach().contiguous().to(d)
        data = (t.view(torch.int16) if d != torch.float32 else t).numpy().tobytes()
        header[name] = {"dtype": names[d], "shape": list(t.shape), "data_offsets": [off, off + len(data)]}
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
    "resnext": (lambda: ResNet(3, [4, 8], [2, 1], imagenet=True, bottleneck=True, groups=2, wpg=32),
                {"arch": "resnet", "channels": [4, 8], "blocks": [2, 1], "stem": "imagenet", "block": "bottleneck",
                 "groups": 2, "width_per_group": 32}, 16),
    "convnext": (lambda: ConvNeXt(3, [4, 8], [2, 1]), {"arch": "convnext", "channels": [4, 8], "blocks": [2, 1]}, 16),
    "convnextv2": (lambda: ConvNeXt(3, [4, 8], [1, 2], v2=True),
                   {"arch": "convnext", "channels": [4, 8], "blocks": [1, 2], "version": 2}, 16),
    "vit": (lambda: ViT(3, 8, 4, 16, 2, 2, 2), {"arch": "vit", "patch": 4, "dim": 16, "depth": 2, "heads": 2, "mlp_ratio": 2}),
    "vit_tanh": (lambda: ViT(3, 8, 4, 16, 1, 2, 2, act="gelu_tanh"),
                 {"arch": "vit", "patch": 4, "dim": 16, "depth": 1, "heads": 2, "mlp_ratio": 2, "act": "gelu_tanh"}),
    "vit_deit3": (lambda: ViT(3, 8, 4, 16, 2, 2, 2, layer_scale=True, no_embed_class=True, pool="avg"),
                  {"arch": "vit", "patch": 4, "dim": 16, "depth": 2, "heads": 2, "mlp_ratio": 2, "layer_scale": True,
                   "no_embed_class": True, "pool": "avg"}),
    "vit_clip": (lambda: ViT(3, 8, 4, 16, 2, 2, 2, act="quick_gelu", eps=1e-5, norm_pre=True, patch_bias=False),
                 {"arch": "vit", "patch": 4, "dim": 16, "depth": 2, "heads": 2, "mlp_ratio": 2, "act": "quick_gelu",
                  "ln_eps": 1e-5, "norm_pre": True, "no_patch_bias": True}),
}


def main():
    torch.set_num_threads(1)
    for i, (arch, entry) in enumerate(MODELS.items()):
        make, spec = entry[0], entry[1]
        hw = entry[2] if len(entry) > 2 else 8
        torch.manual_seed(100 + i)
        gen = torch.Generator().manual_seed(200 + i)
        model = Classifier(make())
        perturb(model, gen)
        model.eval()
        x = torch.randn(2, 3, hw, hw, generator=gen)
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
