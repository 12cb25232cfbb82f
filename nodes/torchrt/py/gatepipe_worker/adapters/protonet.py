"""GATE's few-shot adapter, "fs-protonet" (GATE@65192ec
gate/models/task_adapters/few_shot_classification/protonet.py and
utils.py).

stem -> encoder pooled features -> the encoder's bias-free projection to
768 (GATE's adapter adds nothing more: num_output_features is None in
the tier, so its own linear is an Identity) -> prototypes, the mean of
each class's support embeddings -> logits, the negative squared
Euclidean distance of each query to each prototype. Loss:
F.cross_entropy of the logits against the queries' classes.

Episodes come as gatepipe's trainer gives them: GATE's variable episodes
(gateepisodes.Episode: the rows, each row's class within the episode and
a query mask; prototypes of the classes' support rows, whatever their
number), or gatepipe's fixed ones, a (ways, shots, queries) tuple for
ways x shots support images class by class, then the queries. As in
GATE, the encoder sees the support and the query images as two batches
(which matters to batch norms in training).
"""
import torch
import torch.nn.functional as F
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
        if not isinstance(episode, tuple):  # GATE's variable episode
            support = ~episode.query
            protos = prototypes(self.embed(encode, x[support]), episode.label[support], episode.classes)
            return logits(protos, self.embed(encode, x[episode.query]))
        ways, shots, _ = episode
        n = ways * shots
        protos = self.embed(encode, x[:n]).reshape(ways, shots, -1).mean(dim=1)
        queries = self.embed(encode, x[n:])
        return -(queries.unsqueeze(1) - protos.unsqueeze(0)).pow(2).sum(dim=2)


def prototypes(support, labels, classes):
    """Each class's mean support embedding ([classes, D], float32 outside
    autocast; GATE's compute_prototypes: a class without support rows is
    all zeros)."""
    s = support.float()
    onehot = F.one_hot(labels, classes).to(s.dtype)
    with torch.autocast(s.device.type, enabled=False):
        return (onehot.T @ s) / onehot.sum(dim=0).clamp(min=1).unsqueeze(1)


def logits(protos, queries):
    """The negative squared Euclidean distance of each query to each
    prototype ([queries, classes], in float32; GATE's
    compute_prototypical_logits)."""
    return -(queries.float().unsqueeze(1) - protos.float().unsqueeze(0)).pow(2).sum(dim=2)
