import json
import os
import time

import torch

from .loader import Batches, ranges, readers
from .models import Model, convolutional, init_weights
from .storage import Inputs, RowWriter, Store, write_safetensors


def job_features(run):
    cfg = run.cfg
    store = Store(cfg["store"])
    conv = convolutional(cfg["encoder"])
    inputs = Inputs(store, cfg.get("preprocess"), run.device, channels_last=conv)
    classes = int(cfg.get("classes") or 0)
    torch.manual_seed(int(cfg.get("seed") or 0))  # a library encoder's initialisation
    model = Model(cfg["encoder"], inputs.out_shape(), classes)
    init_weights(model, cfg, lambda msg: run.log({"weights": msg}))
    model.eval().to(run.device)
    if conv:  # oneDNN's and cuDNN's fastest layout for convolutions
        model = model.to(memory_format=torch.channels_last)
    batch = int(cfg.get("batch_size") or 64)
    splits = cfg["splits"]
    total = sum(store.meta["splits"][s] for s in splits)
    done = 0
    os.makedirs(cfg["work"], exist_ok=True)
    steady, steady_from = None, 0
    for name in splits:
        f = store.split(name)
        x = f.tensor("x")
        n = x.shape[0]
        path = os.path.join(cfg["work"], name + ".safetensors")
        out = Outputs(path, n, run.cuda)
        with torch.inference_mode():
            for _, x_in in Batches(x, ranges(n, batch), inputs, threads=readers(run)):
                if conv and x_in.dim() == 4:  # (on the CPU the loader made it so)
                    x_in = x_in.contiguous(memory_format=torch.channels_last)
                with run.autocast():
                    y = model.encoder(x_in)
                    if classes:
                        y = model.head(y).float().softmax(dim=-1)
                out.put(y.float())
                done += y.shape[0]
                run.progress(done, total)
                if steady is None:  # the first batch is warm-up (kernel selection, allocations)
                    if run.cuda:
                        torch.cuda.synchronize()
                    steady, steady_from = time.time(), done
        if n == 0:
            write_safetensors(path, {"x": torch.empty((0, classes or model.encoder.width), dtype=torch.float32)})
        else:
            out.close()
    # Throughput after the first batch, for the log and benchmarks.
    with open(os.path.join(cfg["work"], "stats.json"), "w") as fh:
        json.dump({"images": done - steady_from, "seconds": time.time() - steady if steady else 0}, fh)
    run.progress(done, total, force=True)


class Outputs:
    """A split's features, written to its file as they are produced: from
    a GPU each block is copied into one of two pinned buffers without
    blocking, and written once the next block is on its way."""

    def __init__(self, path, rows, cuda):
        self.path, self.rows, self.cuda = path, rows, cuda
        self.w = None
        self.pinned, self.pending, self.turn = [None, None], None, 0

    def put(self, y):
        if self.w is None:
            self.w = RowWriter(self.path, "x", self.rows, y.shape[1])
        if not self.cuda:
            self.w.write(y)
            return
        buf = self.pinned[self.turn]
        if buf is None or buf.shape[0] < y.shape[0]:
            buf = self.pinned[self.turn] = torch.empty(y.shape, dtype=torch.float32, pin_memory=True)
        block = buf[:y.shape[0]]
        block.copy_(y, non_blocking=True)
        ev = torch.cuda.Event()
        ev.record()
        self.flush()
        self.pending, self.turn = (block, ev), 1 - self.turn

    def flush(self):
        if self.pending is not None:
            block, ev = self.pending
            ev.synchronize()
            self.w.write(block)
            self.pending = None

    def close(self):
        self.flush()
        if self.w is not None:
            self.w.close()
