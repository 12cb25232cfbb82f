"""A researcher's own encoder for gatepipe: arch = "python:mymodel.py:MyNet".

MyNet is a small convolutional network built from a block of its own
(Mixer: a depthwise convolution, a pointwise one and a residual). Its
forward follows GATE's encoder interface: pooled features for the heads
that take one vector per image, the last feature map for dense heads, and
each stage's map.
"""
import torch
from torch import nn


class Mixer(nn.Module):
    """Depthwise 3x3, GELU, pointwise 1x1, batch norm, residual."""

    def __init__(self, width):
        super().__init__()
        self.depthwise = nn.Conv2d(width, width, 3, padding=1, groups=width)
        self.pointwise = nn.Conv2d(width, width, 1)
        self.norm = nn.BatchNorm2d(width)

    def forward(self, x):
        return x + self.norm(self.pointwise(nn.functional.gelu(self.depthwise(x))))


class MyNet(nn.Module):
    def __init__(self, width=32, blocks=2):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, width, 3, stride=2, padding=1), nn.BatchNorm2d(width), nn.GELU())
        self.stages = nn.ModuleList(Mixer(width) for _ in range(blocks))

    def forward(self, images):
        x = self.stem(images)
        per_layer = []
        for stage in self.stages:
            x = stage(x)
            per_layer.append(x)
        return {
            "features": x.mean(dim=(2, 3)),  # [B, width]
            "raw_features": x,  # [B, width, H/2, W/2]: segmentation reads it
            "per_layer_raw_features": per_layer,
        }
