"""GATE's image classification adapter, "backbone-with-linear-single-classifier"
(GATE@65192ec gate/models/task_adapters/standard_classification.py,
BackboneWithLinearClassification).

stem -> encoder -> pooled features ["features"] (ViT: mean of the
final-normed patch tokens; CNN: global average pool) -> the encoder's
bias-free projection to 768 (gate/models/backbones/timm.py) ->
nn.Linear(768, classes) (with bias). Loss: F.cross_entropy on the logits.
(GATE's per-key ModuleDict heads, Happywhale's, are not built: gatepipe's
classification stores have one label column.)
"""
from torch import nn

from . import common
from .stem import make as make_stem


class LinearClassifier(nn.Module):
    """head.stem, head.proj (F -> projection, no bias), head.linear
    (projection -> outputs)."""

    def __init__(self, features, outputs, projection=768, channels=3, stem="instance_norm", device=None):
        super().__init__()
        self.stem = make_stem(stem, channels, device=device)
        self.proj = common.projection(features, projection, device=device)
        self.linear = nn.Linear(projection, outputs, device=device)

    def forward(self, encode, x, q=None, episode=None):
        return self.linear(self.proj(encode(self.stem(x))["features"]))
