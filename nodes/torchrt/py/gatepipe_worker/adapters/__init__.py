"""GATE's task adapters (its "heads"), built from a protocol card.

The job config's ``protocol`` (the card gatepipe's protocol table makes,
protocol/protocol.go) names the task family's adapter and its sizes:

  {"adapter": "segmentation",
   "head": {"name": "transformer_decoder", "blocks": 8, "width": 1024, "heads": 8, "projection": 768},
   "stem": "instance_norm", "loss": "focal_ce_ignore0", "ignore_label": 0,
   "text_encoder": "openai/clip-vit-base-patch16" or null, "scale": "full", ...}

One module per GATE adapter (GATE@65192ece6b8d3f78612bf313e5a84438da451490):

  classification    linear                  classification.py  standard_classification.py
  multilabel        linear                  multilabel.py      multi_class_classification.py
  segmentation      transformer_decoder     segmentation.py    semantic_segmentation.py, blocks/segmentation.py
  relational        relational_transformer  relational.py      relational_reasoning.py
  video             temporal_transformer    temporal.py        temporal_image_classification.py
  video_regression  temporal_transformer    temporal.py        (the same, Metrics.REGRESSION)
  retrieval         duo_modal               duo_modal.py       zero_shot_classification.py, utils/helpers.py
  fewshot           protonet                protonet.py        few_shot_classification/protonet.py, utils.py

with the stem (stem.py, task_adapters/__init__.py), the shared sequence
transformer (common.py) and the losses (losses.py,
gate/metrics/segmentation.py). Every adapter is an nn.Module whose
forward(encode, x, q=None, episode=None) takes the encoder as a function
(Encoder.gate: images -> features, raw_features, per_layer_raw_features)
so that the encoder's tensors stay encoder.* and the adapter's are
head.*. The adapter owns what GATE keeps in its encoder beyond the image
model: the 768 projection (head.proj) and, for the relational and
retrieval adapters, the text tower (head.text) and its projection.

Sizes: the card's head gives blocks, width, heads and projection (the
test and CPU scales send small ones); absent ones take GATE's. The
transformers' feed-forward width is not in the card: GATE's 2048 unless
the head gives "ff". The segmentation decoder's grid is GATE's 64 x 64
unless the head gives "grid".
"""
from .classification import LinearClassifier
from .duo_modal import DuoModalAdapter
from .losses import Loss
from .multilabel import MultiLabelClassifier
from .protonet import ProtoNetAdapter
from .relational import RelationalAdapter
from .segmentation import SegmentationAdapter
from .temporal import TemporalAdapter

__all__ = ["Loss", "build", "build_text", "check", "HEADS", "DEFAULTS"]

# Each family's adapter (the card's head name).
HEADS = {
    "classification": "linear",
    "multilabel": "linear",
    "segmentation": "transformer_decoder",
    "relational": "relational_transformer",
    "video": "temporal_transformer",
    "video_regression": "temporal_transformer",
    "retrieval": "duo_modal",
    "fewshot": "protonet",
}

# GATE's sizes (the tier's, at commit 65192ec).
DEFAULTS = {
    "linear": {"projection": 768},
    "transformer_decoder": {"blocks": 8, "width": 1024, "heads": 8, "grid": 64},
    "relational_transformer": {"blocks": 4, "width": 512, "heads": 8, "ff": 2048},
    "temporal_transformer": {"blocks": 6, "heads": 8, "ff": 2048, "projection": 768},
    "duo_modal": {"width": 768, "projection": 768},
    "protonet": {"projection": 768},
}

TEXT_FAMILIES = ("relational", "retrieval")


def check(task, card):
    """The card's head sizes for task (GATE's where the card leaves one
    out), after checking the card names task's adapter."""
    if not isinstance(card, dict):
        raise SystemExit("protocol: a card (an object), not %r" % type(card).__name__)
    want = HEADS.get(task)
    if want is None:
        raise SystemExit("protocol: no GATE adapter for a %s task (there are %s)" % (task, ", ".join(sorted(HEADS))))
    if card.get("adapter") not in (None, task):
        raise SystemExit("protocol: the card is for a %s adapter, the job is a %s task" % (card["adapter"], task))
    head = card.get("head") or {}
    if head.get("name", want) != want:
        raise SystemExit("protocol: a %s task's GATE adapter is %r, not %r" % (task, want, head["name"]))
    sizes = dict(DEFAULTS[want])
    for k in ("blocks", "width", "heads", "projection", "ff", "grid"):
        if head.get(k):
            sizes[k] = int(head[k])
    if want == "temporal_transformer":
        # GATE's temporal transformer runs on the projected frame features:
        # its width is the projection.
        width = int(head.get("width") or 0)
        if width and width != sizes["projection"]:
            raise SystemExit("protocol: GATE's temporal transformer runs at the projection's width "
                             "(width %d, projection %d): give them equal" % (width, sizes["projection"]))
        sizes["width"] = sizes["projection"]
    if "heads" in sizes and sizes["width"] % sizes["heads"]:
        raise SystemExit("protocol: GATE's %s head: width %d is not a multiple of heads %d" % (want, sizes["width"], sizes["heads"]))
    sizes["apply_blocks"] = bool(head.get("blocks_applied"))
    Loss(task, card)  # the loss name is checked with the rest
    return sizes


def build_text(card, text_cfg):
    """The text tower a card with a text_encoder names: gatepipe_worker's
    CLIPText built from the job's ``text`` ({"width", "layers", "heads",
    "vocab", "context", "weights"}), or None. Imported here, lazily."""
    if not card.get("text_encoder"):
        return None
    if not text_cfg:
        raise SystemExit("protocol: the adapter reads the text tower %s, but the job has no text configuration" % card["text_encoder"])
    from ..cliptext import CLIPText
    return CLIPText(int(text_cfg["width"]), int(text_cfg["layers"]), int(text_cfg["heads"]),
                    vocab=int(text_cfg.get("vocab") or 49408), context=int(text_cfg.get("context") or 77))


def build(task, card, info, outputs, channels=3, text=None, device=None):
    """The adapter for task: info is what the encoder gives
    (Encoder.gate_info: {"features", "raw", "layers"}), outputs the
    classes (or regression outputs), text the text tower (relational and
    retrieval)."""
    s = check(task, card)
    # Go writes the card's stem with omitempty: absent is none.
    stem = card.get("stem") or ""
    f = info["features"]
    if task in ("classification", "multilabel"):
        cls = LinearClassifier if task == "classification" else MultiLabelClassifier
        return cls(f, outputs, s["projection"], channels, stem, device=device)
    if task == "segmentation":
        if not info.get("layers"):
            raise SystemExit("GATE's segmentation adapter needs per-layer features (tokens or maps); this encoder gives none")
        return SegmentationAdapter(info["layers"], outputs, s["width"], s["blocks"], s["heads"], channels, stem,
                                   s["grid"], s["apply_blocks"], device=device)
    if task in ("video", "video_regression"):
        return TemporalAdapter(f, outputs, s["projection"], s["heads"], s["blocks"], s["ff"], channels, stem, device=device)
    if task == "fewshot":
        return ProtoNetAdapter(f, s["projection"], channels, stem, device=device)
    if text is None:
        raise SystemExit("GATE's %s adapter reads a text tower: the protocol card names none (text_encoder)" % HEADS[task])
    if task == "relational":
        if info.get("raw") is None:
            raise SystemExit("GATE's relational adapter reads the encoder's raw features (tokens or a map); this encoder gives none")
        return RelationalAdapter(info["raw"], outputs, text, text.width, s["width"], s["heads"], s["blocks"], s["ff"],
                                 channels, stem, device=device)
    return DuoModalAdapter(f, text, text.width, s["projection"], s["width"], channels, stem, device=device)
