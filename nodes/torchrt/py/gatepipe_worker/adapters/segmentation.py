"""GATE's segmentation adapter, "segmentation-adapter" (GATE@65192ec
gate/models/task_adapters/semantic_segmentation.py, SegmentationAdapter)
and its TransformerSegmentationDecoder (gate/models/blocks/segmentation.py).

stem -> encoder -> per_layer_raw_features (a ViT: every block's
final-normed patch tokens [B, T, D], 12 layers for ViT-B; a CNN: the
last stage's map [B, C, h, w]) -> the decoder -> logits on a 64 x 64
grid -> bicubic (align_corners) to the label size. The decoder, as GATE
builds it at its first call:

- tokens: one Conv1d(T, 64*64, 1) over the token axis ("rescale_conv",
  shared by the layers), applied only where T != 64*64 (a ViT-B/16 at
  GATE's 1024 px has exactly 64*64 tokens, so there it is skipped);
  the layers concatenated on the feature axis [B, L*D, 4096];
  projection Conv1d(L*D, L*width, 1).
  maps: each upsampled (bilinear, align_corners) to 64 x 64 where it is
  not that size, concatenated on channels; projection Conv2d(sum C,
  L*width, 1); flattened row-major to [B, L*width, 4096].
- fuse Conv1d(L*width, width, 1); nn.LazyInstanceNorm1d() - whose
  defaults are affine=True and track_running_stats=True, so it has a
  weight and bias and, in evaluation mode, normalises with its running
  mean and variance (momentum 0.1) like a batch norm; LeakyReLU(0.01);
  Dropout1d(p=0), a no-op.
- final Conv1d(width, classes, 1), viewed as [B, classes, 64, 64].

GATE also builds an nn.TransformerEncoder of ``blocks`` post-norm layers
(width, ``heads`` heads, feed-forward width for tokens and 4 x width for
maps, GELU, dropout 0, a final LayerNorm) and runs it on the fused
features, but its forward then applies the final conv to the features
*before* the transformer (``self.final_conv(fused_act_features)``): the
transformer's output reaches neither the logits nor the loss. Here it is
therefore not built by default; apply_blocks=True (card head
"blocks_applied": true) builds it and feeds its output to the final conv,
which is what the decoder was evidently meant to do but not what GATE
ran. Its unused rescale_conv at T = 64*64 is not built either.

GATE's logits are 256 x 256 against 256 x 256 labels (its images 1024 or
512 px); here they are resized to the size of the masks the worker holds
(the trainer passes it; the input's by default). The loss is in
losses.py.
"""
import math

import torch
import torch.nn.functional as F
from torch import nn

from .stem import make as make_stem

GRID = 64


class TransformerSegmentationDecoder(nn.Module):
    """layers: the per-layer features' shapes, [("tokens", T, D), ...] or
    [("map", C), ...] (one kind)."""

    def __init__(self, layers, classes, width=1024, blocks=8, heads=8, grid=GRID, apply_blocks=False, device=None):
        super().__init__()
        kinds = {spec[0] for spec in layers}
        if len(kinds) != 1:
            raise SystemExit("GATE's segmentation decoder takes per-layer features of one kind (tokens or maps), not %s" % sorted(kinds))
        n = len(layers)
        self.tokens = kinds == {"tokens"}
        self.grid = grid
        cells = grid * grid
        if self.tokens:
            counts = {spec[1] for spec in layers}
            if len(counts) != 1:
                raise SystemExit("GATE's segmentation decoder: the layers hold %s tokens; it takes one count" % sorted(counts))
            t = counts.pop()
            self.rescale = nn.Conv1d(t, cells, 1, device=device) if t != cells else None
            self.project = nn.Conv1d(sum(spec[2] for spec in layers), n * width, 1, device=device)
        else:
            self.rescale = None
            self.project = nn.Conv2d(sum(spec[1] for spec in layers), n * width, 1, device=device)
        self.fuse = nn.Conv1d(n * width, width, 1, device=device)
        self.fuse_norm = nn.InstanceNorm1d(width, affine=True, track_running_stats=True, device=device)
        self.act = nn.LeakyReLU()
        self.blocks = None
        if apply_blocks:
            if width % heads:
                raise SystemExit("GATE's segmentation decoder: width %d is not a multiple of heads %d" % (width, heads))
            layer = nn.TransformerEncoderLayer(d_model=width, nhead=heads, dim_feedforward=width if self.tokens else 4 * width,
                                               dropout=0.0, activation="gelu", batch_first=True, device=device)
            self.blocks = nn.TransformerEncoder(layer, num_layers=blocks, norm=nn.LayerNorm(width, device=device),
                                                enable_nested_tensor=False)
        self.classify = nn.Conv1d(width, classes, 1, device=device)

    def forward(self, feats):
        g = self.grid
        if self.tokens:
            x = torch.cat([(self.rescale(f) if self.rescale is not None else f).transpose(1, 2) for f in feats], dim=1)
            x = self.project(x)
        else:
            maps = [f if tuple(f.shape[-2:]) == (g, g) else F.interpolate(f, size=(g, g), mode="bilinear", align_corners=True)
                    for f in feats]
            x = self.project(torch.cat(maps, dim=1)).flatten(2)
        x = self.act(self.fuse_norm(self.fuse(x)))
        if self.blocks is not None:
            x = self.blocks(x.transpose(1, 2)).transpose(1, 2)
        z = self.classify(x)
        side = math.isqrt(z.shape[2])
        return z.reshape(z.shape[0], z.shape[1], side, side)


class SegmentationAdapter(nn.Module):
    """head.stem and head.decoder; forward gives logits [B, classes, H, W]
    at size (the masks'; default the input's)."""

    def __init__(self, layers, classes, width=1024, blocks=8, heads=8, channels=3, stem="instance_norm",
                 grid=GRID, apply_blocks=False, device=None):
        super().__init__()
        self.stem = make_stem(stem, channels, device=device)
        self.decoder = TransformerSegmentationDecoder(layers, classes, width, blocks, heads, grid, apply_blocks, device=device)

    def forward(self, encode, x, q=None, episode=None, size=None):
        feats = encode(self.stem(x), per_layer=True)["per_layer_raw_features"]
        if feats is None:
            raise SystemExit("GATE's segmentation adapter needs the encoder's per-layer features; this encoder gives none")
        z = self.decoder(list(feats))
        return F.interpolate(z, size=tuple(size or x.shape[-2:]), mode="bicubic", align_corners=True)
