"""The worker's loader alone, as a node runs it: feed.py STORE BATCH PASSES
THREADS reads the store's train split through gatepipe_worker.loader
(reader threads, reused buffers, the store's normalisation) on the CPU,
after a pass that warms the page cache, PASSES passes as one long split, and
prints one JSON line: images,
seconds, images_per_sec, threads, cpu_seconds (the process's, every
thread's) and images_per_cpu_sec. A JPEG store's images are decoded by the
reader threads."""
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
for _ in Batches(x, ranges(x.shape[0], batch), inputs, threads=threads):
    pass  # warms the page cache
count, t, cpu = 0, time.time(), time.process_time()
# The passes as one long split, as a large store is read.
for _, xb in Batches(x, ranges(x.shape[0], batch) * passes, inputs, threads=threads):
    count += xb.shape[0]
sec, cpu = time.time() - t, time.process_time() - cpu
print(json.dumps({"images": count, "seconds": sec, "images_per_sec": count / sec, "threads": threads,
                  "cpu_seconds": cpu, "images_per_cpu_sec": count / cpu}))
