import json
import os
import time

import torch
import torch.nn.functional as F

from .metrics import task_loss
from .models import TaskModel, convolutional

# ---- timing: how fast a model runs here, for plan's estimates ---------------
#
# gatepipe plan times each (model, example shape, batch, precision, device)
# once per machine and keeps the answer: a few training steps and forward
# passes of the encoder with a classification head on random examples, on
# the device the node would get. A step's batch is the recipe's, or smaller
# where one step would pass BUDGET seconds (a large model on CPU torch).

BUDGET = 2.0  # seconds a timed step or pass may take
CLASSES = 10
# The families whose GATE adapter the timing builds (cfg "protocol"): the
# relational and retrieval ones with the card's CLIP text tower (as large
# as a ViT-B at full scale) on random token ids.
TIMED_ADAPTERS = ("classification", "multilabel", "segmentation", "relational", "retrieval", "video", "video_regression")
VIDEO = ("video", "video_regression")
CONTEXT, VOCAB = 77, 49408  # CLIP's tokens a caption, and its vocabulary


def timed(run, fn, count):
    """Seconds per call of fn over count calls (synchronised on a GPU)."""
    if run.cuda:
        torch.cuda.synchronize()
    start = time.time()
    for _ in range(count):
        fn()
    if run.cuda:
        torch.cuda.synchronize()
    return (time.time() - start) / count


class _Pixels:
    """Inputs for timing the card's augmentation alone: the batch is 8-bit
    pixels already, and the augmented pixels become floats."""

    def __init__(self, shape):
        self.shape = shape

    def eight_bit(self):
        return True

    def out_shape(self):
        return self.shape

    def pixels(self, x):
        return x

    def normalized(self, u):
        return u.to(torch.float32)


def decode_time(jpeg):
    """Seconds to decode one image of a JPEG store on one thread, with the
    decoder the loader uses (storage.JPEGRows): an image of the store's
    shape and quality, photograph-like (smooth with some noise: a JPEG's
    decoding cost depends on its content)."""
    import io

    from PIL import Image

    from .storage import _jpeg_decoder
    c, h, w = (int(v) for v in jpeg["shape"])
    g = torch.Generator().manual_seed(0)
    base = F.interpolate(torch.rand(1, c, max(h // 16, 1), max(w // 16, 1), generator=g), size=(h, w), mode="bilinear", align_corners=False)
    img = ((base + 0.1 * torch.rand(1, c, h, w, generator=g)).clamp(0, 1) * 255).to(torch.uint8)[0]
    buf = io.BytesIO()
    Image.fromarray(img.permute(1, 2, 0).numpy() if c == 3 else img[0].numpy()).save(buf, format="JPEG", quality=int(jpeg["quality"]))
    data = torch.frombuffer(bytearray(buf.getvalue()), dtype=torch.uint8)
    decode = _jpeg_decoder()
    decode(data)
    n, start = 0, time.time()
    while n < 5 or (time.time() - start < BUDGET / 4 and n < 2000):
        decode(data)
        n += 1
    return (time.time() - start) / n


def augmentation(card, task, shape):
    """The card's training augmentation for task as the training step runs
    it (augment.Augmenter), or None."""
    if not card or len(shape) not in (3, 4):
        return None
    from .augment import for_card
    aug, _ = for_card(task, card, _Pixels(shape), 0)
    return aug


def job_timing(run):
    cfg = run.cfg
    shape = [int(s) for s in cfg["shape"]]
    want = max(int(cfg["batch"]), 1)
    started = time.time()
    # The node's own head where it changes the cost: GATE's adapter for the
    # image families (the segmentation decoder above all); else the
    # encoder with a classification head (a small share of the step).
    card = cfg.get("protocol")
    frames = int(cfg.get("frames") or 1)  # a clip's: GATE's video adapters take the clip
    task = cfg.get("task") if card and cfg.get("task") in TIMED_ADAPTERS else "classification"
    if task in VIDEO and frames < 2:
        task = "classification"
    protocol = card if card and task == cfg.get("task") else None
    if task in VIDEO:
        shape = [frames] + shape  # times are per frame below, as plan counts them
    text = None
    if protocol and task in ("relational", "retrieval"):
        tower = protocol.get("text") or {}
        text = {"width": tower.get("width"), "layers": tower.get("layers"), "heads": tower.get("heads"), "vocab": VOCAB, "context": CONTEXT}
    outputs = 1 if task == "video_regression" else CLASSES
    model = TaskModel(task, cfg["encoder"], shape, outputs, qlen=CONTEXT if text else 0, vocab=VOCAB if text else 0,
                      protocol=protocol, text=text).to(run.device)
    channels_last = convolutional(cfg["encoder"]) and len(shape) == 3  # as the jobs run it
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def examples(n):
        x = torch.randn(n, *shape, device=run.device)
        return x.contiguous(memory_format=torch.channels_last) if channels_last else x

    aug = augmentation(protocol, task, shape)  # its cost is part of a step's

    def trainer(b):
        x = examples(b)
        y = torch.randint(0, CLASSES, (b,) + (tuple(shape[1:]) if task == "segmentation" else ()), device=run.device)
        if task == "video_regression":
            y = torch.rand(b, device=run.device) * 10
        yf = (y[:, None] == torch.arange(CLASSES, device=run.device)).float() if task == "multilabel" else None
        u = torch.randint(0, 256, (b, *shape), dtype=torch.uint8, device=run.device) if aug is not None else None
        q = torch.randint(0, VOCAB, (b, CONTEXT), device=run.device) if text else None

        def step():
            nonlocal x, y
            if aug is not None:
                xa, y = aug(u, y, 1)
                xa = xa if xa.is_floating_point() else xa.to(torch.float32)  # ACDC's crop keeps the pixels' type
                x = xa.contiguous(memory_format=torch.channels_last) if channels_last and xa.dim() == 4 else xa
            with run.autocast():
                if task == "retrieval":  # (similarities, embeddings): the symmetric in-batch loss
                    loss = task_loss(task, model(x, q), None, None)
                elif task == "video_regression":  # GATE's L1 on the raw counts
                    loss = F.l1_loss(model(x).float().reshape(-1), y)
                else:
                    out = (model(x, q) if q is not None else model(x)).float()
                    loss = F.binary_cross_entropy_with_logits(out, yf) if yf is not None else F.cross_entropy(out, y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        return step

    model.train()
    b = min(want, 2)
    per = timed(run, trainer(b), 2) / b  # the first steps: warm-up and a first guess
    if want > b:
        b = min(want, max(b, int(BUDGET / max(per, 1e-9))))
    step = trainer(b)
    step()  # warm-up at this batch (cuDNN's autotuning)
    fixed = time.time() - started
    count = max(2, min(20, int(BUDGET / max(per * b, 1e-9))))
    train = timed(run, step, count) / b

    model.eval()
    eb = min(int(cfg.get("eval_batch") or 256), max(b, int(BUDGET / max(per / 3, 1e-9))))
    xe = examples(eb)
    qe = torch.randint(0, VOCAB, (eb, CONTEXT), device=run.device) if text else None

    def forward():
        with torch.inference_mode(), run.autocast():
            model(xe, qe) if qe is not None else model(xe)
    forward()
    evaluate = timed(run, forward, max(2, min(20, int(BUDGET / max(per / 3 * eb, 1e-9))))) / eb
    if task in VIDEO:  # per frame, as plan counts a clip's examples
        train, evaluate, b, eb = train / frames, evaluate / frames, b * frames, eb * frames
    decode = decode_time(cfg["jpeg"]) if cfg.get("jpeg") else 0.0
    with open(os.path.join(cfg["work"], "timing.json"), "w") as f:
        json.dump({"train": train, "eval": evaluate, "fixed": fixed, "elapsed": time.time() - started, "batch": b, "eval_batch": eb,
                   "decode": decode, "device": torch.cuda.get_device_name(0) if run.cuda else "cpu", "precision": run.precision}, f)
