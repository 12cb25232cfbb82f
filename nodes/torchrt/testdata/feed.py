"""The worker's loader alone, as a node runs it: feed.py STORE BATCH PASSES
THREADS [device] reads the store's train split through
gatepipe_worker.loader (reader threads, reused buffers, the store's
normalisation) on the CPU, after a pass that warms the page cache, PASSES
passes as one long split, and prints one JSON line: images, seconds,
images_per_sec, threads, cpu_seconds (the process's, every thread's) and
images_per_cpu_sec. A JPEG store's images are decoded by the reader
threads.

With "device" (and THREADS 1), what one reader thread does for each batch
when a GPU computes: the stored batch read (a JPEG store's images decoded)
into a staging buffer laid out as for the GPU (loader.Batches' _fill,
without the pinning, which needs CUDA); making the input is the device's
work then."""
import json
import sys
import time

import torch

from gatepipe_worker.loader import Batches, ranges
from gatepipe_worker.storage import Inputs, Store

store, batch, passes, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
device = len(sys.argv) > 5 and sys.argv[5] == "device"
torch.set_num_threads(1)
s = Store(store)
x = s.split("train").tensor("x")


def stage(batches):
    """Yields each batch of x read into a staging buffer, as a reader
    thread fills it for a GPU."""
    if hasattr(x, "staging"):
        buf = x.staging(batch, device=True)
    else:
        buf = torch.empty((batch,) + tuple(x.shape[1:]), dtype=x.dtype)
    for a, b in batches:
        out = buf[:b - a]
        if hasattr(x, "read_into"):
            x.read_into((a, b), out)
        else:
            out.copy_(x[a:b])
        yield out


def feed(batches):
    if device:
        if threads != 1:
            raise SystemExit("feed.py: device mode measures one reader thread")
        return enumerate(stage(batches))
    return Batches(x, batches, Inputs(s, None, torch.device("cpu")), threads=threads)


for _ in feed(ranges(x.shape[0], batch)):
    pass  # warms the page cache
count, t, cpu = 0, time.time(), time.process_time()
# The passes as one long split, as a large store is read.
for _, xb in feed(ranges(x.shape[0], batch) * passes):
    count += xb.shape[0]
sec, cpu = time.time() - t, time.process_time() - cpu
print(json.dumps({"images": count, "seconds": sec, "images_per_sec": count / sec, "threads": threads,
                  "cpu_seconds": cpu, "images_per_cpu_sec": count / cpu, "device": device}))
