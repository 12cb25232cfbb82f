"""The worker's loader alone, as a node runs it: feed.py STORE BATCH PASSES
THREADS reads the store's train split through gatepipe_worker.loader
(reader threads, reused buffers, the store's normalisation) on the CPU, a
first pass warming the page cache, and prints one JSON line: images,
seconds, images_per_sec, threads."""
import json
import sys
import time

import torch

from gatepipe_worker.loader import Batches, ranges
from gatepipe_worker.storage import Inputs, Store

store, batch, passes, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
torch.set_num_threads(1)
s = Store(store)
x = s.split("train").tensor("x")
inputs = Inputs(s, None, torch.device("cpu"))
count, t = 0, None
for p in range(passes + 1):
    if p == 1:
        t = time.time()
    for _, xb in Batches(x, ranges(x.shape[0], batch), inputs, threads=threads):
        if p > 0:
            count += xb.shape[0]
sec = time.time() - t
print(json.dumps({"images": count, "seconds": sec, "images_per_sec": count / sec, "threads": threads}))
