"""GATE's few-shot adapter, "fs-protonet" (GATE@65192ec
gate/models/task_adapters/few_shot_classification/protonet.py and
utils.py).

stem -> encoder pooled features -> the encoder's bias-free projection to
768 (GATE's adapter adds nothing more: num_output_features is None in
the tier, so its own linear is an Identity) -> prototypes, the mean of
each class's support embeddings -> logits, the negative squared
Euclidean distance of each query to each prototype. Loss:
F.cross_entropy of the logits against the queries' classes.

Episodes come laid out as gatepipe's trainer lays them out: the support
set, ways x shots images class by class, then the queries. As in GATE,
the encoder sees the support and the query images as two batches (which
matters to batch norms in training).
"""
from torch import nn

from . import common
from .stem import make as make_stem


class ProtoNetAdapter(nn.Module):
    def __init__(self, features, projection=768, channels=3, stem="instance_norm", device=None):
        super().__init__()
        self.stem = make_stem(stem, channels, device=device)
        self.proj = common.projection(features, projection, device=device)

    def embed(self, encode, x):
        return self.proj(encode(self.stem(x))["features"])

    def forward(self, encode, x, q=None, episode=None):
        ways, shots, _ = episode
        n = ways * shots
        protos = self.embed(encode, x[:n]).reshape(ways, shots, -1).mean(dim=1)
        queries = self.embed(encode, x[n:])
        return -(queries.unsqueeze(1) - protos.unsqueeze(0)).pow(2).sum(dim=2)
