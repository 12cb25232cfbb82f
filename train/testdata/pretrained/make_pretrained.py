#!/usr/bin/env python3
"""Writes torchvision-made fixtures for gatepipe's pretrained-encoder tests.

Usage: /usr/bin/python3 make_pretrained.py OUTDIR

Needs Debian's python3-torchvision (0.14) and nothing from a model hub:
every model is randomly initialised (with its normalisation statistics and
layer scales perturbed, so that a wrong name or formula shows), run in eval
mode on a fixed input, and saved as safetensors (written by hand) with:
  - the model's state_dict under the names of its ecosystem,
  - "parity.input" [1, 3, H, W] and "parity.logits" [1, 10],
  - metadata "preset" (gatepipe's preset name), "format" (torchvision or
    timm) and "classes".

Files:
  resnet18, resnet50, resnext50_32x4d, convnext_tiny, vit_b_16
      torchvision's models, torchvision's names;
  convnext_tiny_timm
      the same weights renamed to timm's names (the mapping is timm_name
      below, for ConvNeXt and the ViT; SPEC.md documents it; the small ViT
      fixtures of ../parity are timm-named);
  resnet18_bf16
      resnet18 stored in BF16 (logits of the BF16-rounded weights);
  vit_small_resized
      a small torchvision ViT trained for 32x32 inputs run on 48x48 ones,
      its position embedding resampled as timm's resample_abs_pos_embed
      does (bicubic, antialiased);
  preprocess
      inputs and outputs of torchvision's Resize (antialias=True) +
      CenterCrop + Normalize for bilinear and bicubic, up and down.
"""
import json
import os
import re
import sys

import torch
import torch.nn.functional as F
import torchvision
from torchvision import transforms as T

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "parity"))
from make_parity import write_safetensors  # noqa: E402

CLASSES = 10


def perturb(model, gen):
    with torch.no_grad():
        for name, t in model.state_dict().items():
            if name.endswith("running_var"):
                t.copy_(0.5 + torch.rand(t.shape, generator=gen))
            elif name.endswith("running_mean"):
                t.copy_(0.2 * torch.randn(t.shape, generator=gen))
            elif name.endswith("layer_scale"):
                t.copy_(0.5 + 0.2 * torch.randn(t.shape, generator=gen))
            elif t.dim() == 1 and name.endswith("weight") and ("bn" in name or "downsample.1" in name or "ln" in name
                                                              or re.search(r"features\.\d+\.(\d+\.block\.2|[01])\.weight", name)
                                                              or name.startswith("classifier.0")):
                t.copy_(1 + 0.2 * torch.randn(t.shape, generator=gen))
            elif name.startswith("heads.head"):  # torchvision zero-initialises the ViT's head
                t.copy_(0.05 * torch.randn(t.shape, generator=gen))
            elif name.endswith(("class_token", "pos_embedding")):
                t.copy_(0.5 * torch.randn(t.shape, generator=gen))


# TIMM: torchvision name -> timm name, for the two families whose names
# differ (a ResNet's are the same in both).
def timm_name(arch, name):
    if arch == "convnext":
        rules = [
            (r"^features\.0\.0\.", "stem.0."), (r"^features\.0\.1\.", "stem.1."),
            (r"^classifier\.0\.", "head.norm."), (r"^classifier\.2\.", "head.fc."),
        ]
        for pat, rep in rules:
            if re.match(pat, name):
                return re.sub(pat, rep, name)
        m = re.match(r"^features\.(\d+)\.(\d+)\.(block\.(\d+)\.(weight|bias)|layer_scale)$", name)
        if m and int(m.group(1)) % 2 == 1:
            stage = f"stages.{(int(m.group(1)) - 1) // 2}.blocks.{m.group(2)}."
            if m.group(3) == "layer_scale":
                return stage + "gamma"
            part = {"0": "conv_dw", "2": "norm", "3": "mlp.fc1", "5": "mlp.fc2"}[m.group(4)]
            return stage + part + "." + m.group(5)
        m = re.match(r"^features\.(\d+)\.([01])\.(weight|bias)$", name)
        if m and int(m.group(1)) % 2 == 0:
            return f"stages.{int(m.group(1)) // 2}.downsample.{m.group(2)}.{m.group(3)}"
        raise KeyError(name)
    if arch == "vit":
        top = {"conv_proj.weight": "patch_embed.proj.weight", "conv_proj.bias": "patch_embed.proj.bias",
               "class_token": "cls_token", "encoder.pos_embedding": "pos_embed", "encoder.ln.weight": "norm.weight",
               "encoder.ln.bias": "norm.bias", "heads.head.weight": "head.weight", "heads.head.bias": "head.bias"}
        if name in top:
            return top[name]
        m = re.match(r"^encoder\.layers\.encoder_layer_(\d+)\.(.+)$", name)
        part = {"ln_1": "norm1", "ln_2": "norm2", "self_attention.in_proj_weight": "attn.qkv.weight",
                "self_attention.in_proj_bias": "attn.qkv.bias", "self_attention.out_proj": "attn.proj",
                "mlp.0": "mlp.fc1", "mlp.3": "mlp.fc2"}
        rest = m.group(2)
        for k, v in part.items():
            if rest == k or rest.startswith(k + "."):
                return f"blocks.{m.group(1)}.{v}{rest[len(k):]}"
        raise KeyError(name)
    return name


def state(model):
    return {k: v for k, v in model.state_dict().items() if not k.endswith("num_batches_tracked")}


def fixture(out, name, preset, model, x, fmt="torchvision", rename=None, dtype=torch.float32):
    model.eval()
    if dtype != torch.float32:
        with torch.no_grad():
            for p in model.state_dict().values():
                if p.is_floating_point():
                    p.copy_(p.to(dtype).to(torch.float32))
    with torch.no_grad():
        logits = model(x)
    tensors = state(model)
    if rename:
        tensors = {rename(k): v for k, v in tensors.items()}
    tensors["parity.input"], tensors["parity.logits"] = x, logits
    meta = {"preset": preset, "format": fmt, "classes": str(CLASSES), "torch": torch.__version__,
            "torchvision": torchvision.__version__}
    write_safetensors(os.path.join(out, name + ".safetensors"), tensors, meta, dtype)
    print(name, sum(v.numel() for k, v in tensors.items() if not k.startswith("parity.")), "values", flush=True)


def preprocess(out, gen):
    img = torch.rand(3, 37, 50, generator=gen)
    mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
    cases, tensors = [], {"input": img}
    for i, (interp, size, crop) in enumerate([("bilinear", 64, 56), ("bicubic", 64, 56), ("bilinear", 20, 17),
                                              ("bicubic", 20, 17), ("bicubic", 37, 37)]):
        mode = {"bilinear": T.InterpolationMode.BILINEAR, "bicubic": T.InterpolationMode.BICUBIC}[interp]
        t = T.Compose([T.Resize(size, interpolation=mode, antialias=True), T.CenterCrop(crop), T.Normalize(mean, std)])
        tensors[f"case{i}"] = t(img)
        cases.append({"interpolation": interp, "resize": size, "crop": crop})
    write_safetensors(os.path.join(out, "preprocess.safetensors"), tensors,
                      {"cases": json.dumps(cases), "mean": json.dumps(mean), "std": json.dumps(std)})
    print("preprocess", len(cases), "cases", flush=True)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    gen = torch.Generator().manual_seed(7)
    preprocess(out, gen)
    x = torch.randn(1, 3, 224, 224, generator=gen)
    models = torchvision.models
    for i, (name, make, arch) in enumerate([
        ("resnet18", models.resnet18, "resnet"), ("resnet50", models.resnet50, "resnet"),
        ("resnext50_32x4d", models.resnext50_32x4d, "resnet"), ("convnext_tiny", models.convnext_tiny, "convnext"),
        ("vit_b_16", models.vit_b_16, "vit"),
    ]):
        torch.manual_seed(10 + i)
        model = make(weights=None, num_classes=CLASSES)
        perturb(model, gen)
        fixture(out, name, name, model, x)
        if arch == "convnext":
            fixture(out, name + "_timm", name, model, x, fmt="timm", rename=lambda k, a=arch: timm_name(a, k))
        if name == "resnet18":
            fixture(out, name + "_bf16", name, model, x, dtype=torch.bfloat16)
    # A ViT trained at 32x32 run at 48x48: timm resamples the grid.
    torch.manual_seed(20)
    small = models.VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2, hidden_dim=16,
                                     mlp_dim=64, num_classes=CLASSES)
    perturb(small, gen)
    big = models.VisionTransformer(image_size=48, patch_size=8, num_layers=2, num_heads=2, hidden_dim=16,
                                   mlp_dim=64, num_classes=CLASSES)
    sd = state(small)
    pe = sd["encoder.pos_embedding"]
    grid = pe[:, 1:].reshape(1, 4, 4, 16).permute(0, 3, 1, 2)
    grid = F.interpolate(grid, size=(6, 6), mode="bicubic", antialias=True, align_corners=False)
    big_sd = dict(sd)
    big_sd["encoder.pos_embedding"] = torch.cat([pe[:, :1], grid.permute(0, 2, 3, 1).reshape(1, 36, 16)], dim=1)
    big.load_state_dict(big_sd)
    big.eval()
    x48 = torch.randn(1, 3, 48, 48, generator=gen)
    with torch.no_grad():
        logits = big(x48)
    tensors = dict(sd)
    tensors["parity.input"], tensors["parity.logits"] = x48, logits
    spec = {"arch": "vit", "patch": 8, "dim": 16, "depth": 2, "heads": 2, "mlp_ratio": 4}
    write_safetensors(os.path.join(out, "vit_small_resized.safetensors"), tensors,
                      {"spec": json.dumps(spec), "format": "torchvision", "classes": str(CLASSES)})
    print("vit_small_resized", flush=True)


if __name__ == "__main__":
    main()
