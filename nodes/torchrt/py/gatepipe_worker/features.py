import json
import os
import time

import torch

from .models import Model, convolutional, init_weights
from .storage import Inputs, Store, write_safetensors

def job_features(run):
    cfg = run.cfg
    store = Store(cfg["store"])
    inputs = Inputs(store, cfg.get("preprocess"), run.device)
    classes = int(cfg.get("classes") or 0)
    torch.manual_seed(int(cfg.get("seed") or 0))  # a library encoder's initialisation
    model = Model(cfg["encoder"], inputs.out_shape(), classes)
    init_weights(model, cfg, lambda msg: run.log({"weights": msg}))
    model.eval().to(run.device)
    conv = convolutional(cfg["encoder"])
    if run.cuda and conv:
        model = model.to(memory_format=torch.channels_last)
    batch = int(cfg.get("batch_size") or 64)
    splits = cfg["splits"]
    total = sum(store.meta["splits"][s] for s in splits)
    done = 0
    os.makedirs(cfg["work"], exist_ok=True)
    steady, steady_from = None, 0
    for name in splits:
        f = store.split(name)
        n = f.info("x")["shape"][0]
        out = None
        with torch.inference_mode():
            for i, raw in prefetched(f, n, batch, run.cuda):
                x = inputs(raw)
                if run.cuda and conv and x.dim() == 4:
                    x = x.contiguous(memory_format=torch.channels_last)
                with run.autocast():
                    y = model.encoder(x)
                    if classes:
                        y = model.head(y).float().softmax(dim=-1)
                y = y.float()
                if out is None:
                    out = torch.empty((n, y.shape[1]), dtype=torch.float32, pin_memory=run.cuda)
                out[i:i + y.shape[0]].copy_(y, non_blocking=True)
                done += y.shape[0]
                run.progress(done, total)
                if steady is None:  # the first batch is warm-up (kernel selection, allocations)
                    if run.cuda:
                        torch.cuda.synchronize()
                    steady, steady_from = time.time(), done
        if run.cuda:
            torch.cuda.synchronize()
        if out is None:
            out = torch.empty((0, classes or model.encoder.width), dtype=torch.float32)
        write_safetensors(os.path.join(cfg["work"], name + ".safetensors"), {"x": out})
    # Throughput after the first batch, for the log and benchmarks.
    with open(os.path.join(cfg["work"], "stats.json"), "w") as fh:
        json.dump({"images": done - steady_from, "seconds": time.time() - steady if steady else 0}, fh)
    run.progress(done, total, force=True)


def prefetched(f, n, batch, pin):
    """Yields (offset, stored batch) of split file f, the next batch read
    (and pinned, for a GPU) on a thread while the current one computes."""
    import concurrent.futures
    def read(i):
        x = f.tensor("x", (i, min(i + batch, n)))
        return x.pin_memory() if pin else x.clone()
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        nxt = pool.submit(read, 0) if n > 0 else None
        for i in range(0, n, batch):
            x = nxt.result()
            if i + batch < n:
                nxt = pool.submit(read, i + batch)
            yield i, x


