"""GATE's variable few-shot episodes for the train job (config.episodes =
"gate", with a protocol card: GATE's ProtoNet adapter).

gatepipe draws them as GATE's sampler does (GATE@65192ec
gate/data/few_shot/core.py; gatepipe's train.GATEEpisodes): per episode
a number of ways, distinct classes, per-class shots within a support
budget and the same queries for every class. The draws file holds each
split's episodes (split train, val or test) in a ragged layout:

  gate_SPLIT_index    I32 [rows]          the split's examples
  gate_SPLIT_label    I32 [rows]          the class within the episode
  gate_SPLIT_query    U8  [rows]          1: a query, 0: support
  gate_SPLIT_offsets  I32 [episodes + 1]  episode e is rows offsets[e]:offsets[e+1]

The train job takes one training episode a step (GATE's batch of one
episode), evaluates every validation episode (checkpoints ranked by the
mean of the episodes' query accuracies, as GATE's evaluator averages its
per-episode accuracy_top_1) and writes the test episodes' query
probabilities as one flat F32 tensor, gate_pred (each episode's
[queries, classes] row-major, the episodes in order), from which gatepipe
computes the test metrics.
"""
import numpy as np
import torch

LAYOUT = "gate"
SPLITS = ("train", "val", "test")


class Episode:
    """One episode on the device: index (the split's rows), label (the
    class within the episode), query (a bool mask) and classes."""

    __slots__ = ("index", "label", "query", "classes")

    def __init__(self, index, label, query, classes):
        self.index, self.label, self.query, self.classes = index, label, query, classes

    def targets(self):
        """The queries' classes, in row order."""
        return self.label[self.query]


class Episodes:
    """A split's ragged episodes from the draws file."""

    def __init__(self, draws, split, device, rows):
        name = "gate_" + split
        missing = [name + s for s in ("_index", "_label", "_query", "_offsets") if name + s not in draws.header]
        if missing:
            raise SystemExit("%s: no %s (GATE's %s episodes)" % (draws.path, ", ".join(missing), split))
        index = draws.tensor(name + "_index").long()
        label = draws.tensor(name + "_label").long()
        query = draws.tensor(name + "_query").bool()
        offsets = draws.tensor(name + "_offsets").long().tolist()
        n = index.shape[0]
        if label.shape[0] != n or query.shape[0] != n or not offsets or offsets[0] != 0 or offsets[-1] != n:
            raise SystemExit("%s: %s's %d rows, %d labels, %d query flags and offsets %s..%s do not agree"
                             % (draws.path, name, n, label.shape[0], query.shape[0], offsets[:1], offsets[-1:]))
        if n and (int(index.min()) < 0 or int(index.max()) >= rows):
            raise SystemExit("%s: %s names rows outside the %s split's %d" % (draws.path, name, split, rows))
        if n and int(label.min()) < 0:
            raise SystemExit("%s: %s has a negative class" % (draws.path, name))
        starts, sizes = np.array(offsets[:-1], dtype=np.int64), np.diff(np.array(offsets, dtype=np.int64))
        if not len(starts):
            raise SystemExit("%s: %s holds no episodes" % (draws.path, name))
        if sizes.min() <= 0:
            raise SystemExit("%s: %s episode %d has no rows" % (draws.path, name, int(np.argmin(sizes))))
        queries = np.add.reduceat(query.numpy().astype(np.int64), starts)
        bad = np.nonzero((queries == 0) | (queries == sizes))[0]
        if len(bad):
            raise SystemExit("%s: %s episode %d has no support or no query" % (draws.path, name, int(bad[0])))
        self.classes = (np.maximum.reduceat(label.numpy(), starts) + 1).tolist()
        self.offsets = offsets
        self.index, self.label, self.query = index.to(device), label.to(device), query.to(device)

    def __len__(self):
        return len(self.offsets) - 1

    def __getitem__(self, e):
        a, b = self.offsets[e], self.offsets[e + 1]
        return Episode(self.index[a:b], self.label[a:b], self.query[a:b], self.classes[e])

    def __iter__(self):
        return (self[e] for e in range(len(self)))


def load(cfg, draws, device, rows):
    """The splits' episodes ({split: Episodes}) when the job config asks
    for GATE's episodes, else None. rows: each split's examples."""
    layout = cfg.get("episodes")
    if not layout:
        return None
    if layout != LAYOUT:
        raise SystemExit("episodes: %r, not a layout this worker reads (%r)" % (layout, LAYOUT))
    if cfg.get("task") != "fewshot" or not cfg.get("protocol"):
        raise SystemExit("GATE's episodes are for a few-shot task with GATE's ProtoNet adapter (a protocol card)")
    return {s: Episodes(draws, s, device, rows[s]) for s in SPLITS}


def metrics(probs, episodes):
    """Acc@1 (%) and the loss of the episodes' query probabilities (per
    episode [queries, classes]): each episode's mean over its queries,
    then the mean over the episodes (GATE's epoch mean)."""
    accs, losses = [], []
    for p, e in zip(probs, episodes):
        y = e.targets()
        p = p.double()
        accs.append(100 * (p.argmax(dim=1) == y).double().mean().item())
        losses.append(-torch.log(p.gather(1, y.unsqueeze(1)) + 1e-7).mean().item())
    return {"acc1": sum(accs) / len(accs), "loss": sum(losses) / len(losses)}
