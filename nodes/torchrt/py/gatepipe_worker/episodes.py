import json
import os

import torch
import torch.nn.functional as F

from .storage import Store

# ---- Meta-Dataset episodes: the episodes block's adapters -------------------
#
# The episodes (classes, support and query indices) are gatepipe's
# (episode_indices.json); every adapter is deterministic from them, so the
# torch runtime scores what the Go runtime scores.

COSINE_SCALE = 10.0


def _prototypes(s, y, ways):
    p = torch.zeros((ways, s.shape[1]), dtype=s.dtype, device=s.device).index_add_(0, y, s)
    n = torch.bincount(y, minlength=ways).clamp(min=1).to(s.dtype)
    return p / n[:, None]


def _cosine(w, x, scale):
    nx = x.norm(dim=1, keepdim=True).clamp(min=1e-12)
    nw = w.norm(dim=1).clamp(min=1e-12)
    return scale * (x @ w.T) / (nx * nw)


class _Adam:
    """Adam with PyTorch's defaults, as gatepipe's Go adapters step it."""

    def __init__(self, lr):
        self.lr, self.m, self.v, self.t = lr, None, None, 0

    def step(self, p, g):
        if self.m is None:
            self.m, self.v = torch.zeros_like(p), torch.zeros_like(p)
        self.t += 1
        c1, c2 = 1 - 0.9 ** self.t, 1 - 0.999 ** self.t
        self.m.mul_(0.9).add_(0.1 * g)
        self.v.mul_(0.999).add_(0.001 * g * g)
        p -= self.lr * (self.m / c1) / (torch.sqrt(self.v / c2) + 1e-8)


def adapt_proto_euclidean(s, y, ways, q):
    p = _prototypes(s, y, ways)
    return -((q[:, None, :] - p[None, :, :]) ** 2).sum(dim=2)


def adapt_proto_cosine(s, y, ways, q):
    return _cosine(_prototypes(s, y, ways), q, 1.0)


def adapt_cosine_classifier(s, y, ways, q):
    """Started from the prototypes, 100 full-batch Adam steps (lr 0.01) of
    the cosine classifier's cross-entropy, gradients by autograd."""
    w = _prototypes(s, y, ways)
    opt = _Adam(0.01)
    for _ in range(100):
        wv = w.detach().requires_grad_(True)
        with torch.enable_grad():
            loss = F.cross_entropy(_cosine(wv, s, COSINE_SCALE), y)
            (g,) = torch.autograd.grad(loss, wv)
        with torch.no_grad():
            opt.step(w, g)
    return _cosine(w, q, COSINE_SCALE)


def adapt_linear(s, y, ways, q):
    """Softmax regression from zeros on the support set standardised by
    its own statistics, 100 full-batch Adam steps (lr 0.01)."""
    mean = s.mean(dim=0)
    std = torch.sqrt(((s - mean) ** 2).mean(dim=0)) + 1e-6
    sup, qry = (s - mean) / std, (q - mean) / std
    w = torch.zeros((ways, s.shape[1]), dtype=s.dtype, device=s.device)
    b = torch.zeros(ways, dtype=s.dtype, device=s.device)
    ow, ob = _Adam(0.01), _Adam(0.01)
    onehot = F.one_hot(y, ways).to(s.dtype)
    for _ in range(100):
        p = torch.softmax(sup @ w.T + b, dim=1) - onehot
        p /= sup.shape[0]
        ow.step(w, p.T @ sup)
        ob.step(b, p.sum(dim=0))
    return qry @ w.T + b


ADAPTERS = {"proto_euclidean": adapt_proto_euclidean, "proto_cosine": adapt_proto_cosine,
            "cosine_classifier": adapt_cosine_classifier, "linear": adapt_linear}


def job_episodes(run):
    cfg = run.cfg
    dtype = torch.float64 if (cfg.get("precision") or "fp64") == "fp64" else torch.float32
    f = Store(cfg["store"]).split(cfg["split"])
    x = f.tensor("x").to(run.device, dtype)
    labels = f.tensor("y").to(run.device, torch.int64)
    with open(cfg["episodes"]) as fh:
        episodes = json.load(fh)
    acc = {name: [] for name in cfg["adapters"]}
    with torch.no_grad():
        for e, ep in enumerate(episodes):
            classes = torch.tensor(ep["classes"], device=run.device)
            local = torch.full((int(labels.max().item()) + 1,), -1, dtype=torch.int64, device=run.device)
            local[classes] = torch.arange(len(ep["classes"]), device=run.device)
            si = torch.tensor(ep["support"], device=run.device)
            qi = torch.tensor(ep["query"], device=run.device)
            sy, qy = local[labels[si]], local[labels[qi]]
            for name in cfg["adapters"]:
                scores = ADAPTERS[name](x[si], sy, len(ep["classes"]), x[qi])
                acc[name].append(100.0 * (scores.argmax(dim=1) == qy).double().mean().item() if len(qy) else 0.0)
            run.progress(e + 1, len(episodes))
    run.progress(len(episodes), len(episodes), force=True)
    with open(os.path.join(cfg["work"], "accuracy.json"), "w") as fh:
        json.dump(acc, fh)


