"""GATE's video adapter, "temporal-classification" (GATE@65192ec
gate/models/task_adapters/temporal_image_classification.py,
BackboneWithTemporalTransformerAndLinear), for classification and, with
Metrics.REGRESSION (gate/tiers/configs/video_regression.py), regression.

clip [B, S, C, H, W] -> frames [B*S, C, H, W] -> stem -> encoder pooled
features -> the encoder's bias-free projection to 768 -> [B, S, 768] ->
VariableSequenceTransformerEncoder (common.SequenceTransformer: 6
pre-norm layers, d 768 = the projection, 8 heads, feed-forward 2048,
dropout 0, sinusoidal positions as GATE adds them, a final LayerNorm) ->
the last frame's token -> LayerNorm (output_norm) -> nn.Linear(768,
classes). Loss: F.cross_entropy; regression (num_classes 1, iWildCam):
F.l1_loss on the raw counts (RegressionMetrics), no standardising.
"""
from torch import nn

from . import common
from .stem import make as make_stem


class TemporalAdapter(nn.Module):
    def __init__(self, features, outputs, projection=768, heads=8, blocks=6, ff=2048, channels=3,
                 stem="instance_norm", device=None):
        super().__init__()
        self.stem = make_stem(stem, channels, device=device)
        self.proj = common.projection(features, projection, device=device)
        self.temporal = common.SequenceTransformer(projection, heads, ff, blocks, device=device)
        self.linear = nn.Linear(projection, outputs, device=device)

    def forward(self, encode, x, q=None, episode=None):
        b, s = x.shape[0], x.shape[1]
        f = self.proj(encode(self.stem(x.flatten(0, 1)))["features"])
        return self.linear(self.temporal(f.reshape(b, s, -1)))
