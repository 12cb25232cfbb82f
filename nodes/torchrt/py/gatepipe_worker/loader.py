"""The worker's one loader: batches of a memory-mapped split, read ahead
on reader threads into a ring of reused buffers.

A GPU runs a ResNet-50's forward pass at thousands of images a second; one
Python thread that gathers, pins and normalises each batch feeds it a
fraction of that. Here THREADS reader threads (the node's CPUs) each take
the next batch number and a free buffer of the ring, gather the batch's
stored rows into it (torch's copy and index_select release the GIL, so the
threads read in parallel), and the consumer gets the batches in order:

- for a GPU the buffers are pinned and hold the stored uint8 (a quarter of
  float32's bytes): the consumer copies one to the device without
  blocking and the encoder's input is made there (Inputs: one fused
  multiply-add, or the evaluation transform); the buffer goes back to the
  ring once its copy is done (a CUDA event);
- on the CPU the reader threads also make the input, into reused float32
  buffers, so that no batch allocates (or page-faults in) fresh memory.

Buffers are allocated once per loader, so the feed does not depend on the
process's malloc settings.
"""

import threading

import torch


# RING_BYTES bounds a loader's buffers.
RING_BYTES = 1 << 30


class Batches:
    """The batches of split tensor x (on the CPU, memory-mapped), each a
    (start, end) range of rows or a LongTensor of row indices, in order, as
    encoder inputs on inputs.device. Iterating yields (batch number, input);
    an input is valid until the next one is asked for."""

    def __init__(self, x, batches, inputs, threads=1, depth=None):
        self.x, self.batches, self.inputs = x, list(batches), inputs
        self.cuda = inputs.device.type == "cuda"
        rows = max((_rows(b) for b in self.batches), default=0)
        shape = (rows,) + tuple(x.shape[1:])
        # The ring holds at most RING_BYTES (pinned memory is the
        # machine's; 128 clips of 10 frames at 224 px are 193 MB a
        # buffer), and at least two buffers.
        per = max(1, rows * x[0].numel() * x.element_size()) if len(x) else 1
        most = max(2, RING_BYTES // per)
        self.threads = max(1, min(int(threads), len(self.batches) or 1, most - 1))
        self.depth = min(depth or self.threads + 2, most)
        # Normal tensors even under the consumer's inference_mode: the
        # reader threads (outside it) write them in place. On the CPU,
        # ranges are made straight from the map and need none.
        self.jpeg = hasattr(x, "read_into")  # a JPEG store's rows, decoded by the readers
        need = self.cuda or self.jpeg or any(not isinstance(b, tuple) for b in self.batches)
        with torch.inference_mode(False):
            if self.jpeg:  # laid out as the decoder leaves an image
                self.raw = [x.staging(rows, device=self.cuda) for _ in range(self.depth)]
            else:
                self.raw = [torch.empty(shape if need else (0,), dtype=x.dtype, pin_memory=self.cuda) for _ in range(self.depth)]
        # On the CPU the readers make the input too, into these.
        self.made = [None] * self.depth
        # One lock, two conditions: readers wait for a free slot, the
        # consumer for its next batch; neither wakes the other kind.
        self.mutex = threading.Lock()
        self.lock = threading.Condition(self.mutex)  # a slot is free
        self.done = threading.Condition(self.mutex)  # a batch is ready
        self.free = list(range(self.depth))
        self.ready = {}  # batch number -> (slot, input or None, error)
        self.next = 0
        self.stop = False
        self.events = [None] * self.depth
        self.device_out = [None, None]
        self.workers = [threading.Thread(target=self._read, daemon=True) for _ in range(self.threads)]
        for w in self.workers:
            w.start()

    def _read(self):
        while True:
            with self.lock:
                while not self.stop and not self.free and self.next < len(self.batches):
                    self.lock.wait()
                if self.stop or self.next >= len(self.batches):
                    return
                # A slot first, then the number: the smallest number not
                # yet done always holds a slot, so the ring cannot stall.
                slot, k = self.free.pop(), self.next
                self.next += 1
            try:
                made = self._fill(slot, self.batches[k])
                err = None
            except BaseException as e:  # handed to the consumer
                made, err = None, e
            with self.mutex:
                self.ready[k] = (slot, made, err)
                self.done.notify()

    def _fill(self, slot, b):
        if isinstance(b, tuple) and not self.cuda and not self.jpeg:
            buf = self.x[b[0]:b[1]]  # the input is made straight from the map
        else:
            buf = self.raw[slot][:_rows(b)]
            if self.jpeg:
                self.x.read_into(b, buf)
            elif isinstance(b, tuple):
                buf.copy_(self.x[b[0]:b[1]])
            else:
                torch.index_select(self.x, 0, b, out=buf)
        if self.cuda:
            return None
        made, self.made[slot] = self.inputs.make(buf, self.made[slot])
        return made

    def _release(self, slot):
        with self.mutex:
            self.free.append(slot)
            self.lock.notify()

    def __iter__(self):
        held = None
        try:
            for k in range(len(self.batches)):
                with self.mutex:
                    while k not in self.ready:
                        self.done.wait()
                    slot, made, err = self.ready.pop(k)
                if held is not None:  # the previous buffer's copy is done
                    if self.events[held] is not None:
                        self.events[held].synchronize()
                    self._release(held)
                    held = None
                if err is not None:
                    self._release(slot)
                    raise err
                if self.cuda:
                    n = _rows(self.batches[k])
                    x = self.raw[slot][:n].to(self.inputs.device, non_blocking=True)
                    ev = self.events[slot] = self.events[slot] or torch.cuda.Event()
                    ev.record()
                    # Two device buffers in turn: the previous input may
                    # still be read by work queued on it.
                    turn = k % 2
                    made, self.device_out[turn] = self.inputs.make(x, self.device_out[turn])
                    held = slot
                else:
                    held = slot  # the input lives in the slot's buffer
                yield k, made
        finally:
            self.close()
            if held is not None:
                self._release(held)

    def close(self):
        with self.mutex:
            self.stop = True
            self.lock.notify_all()
        for w in self.workers:
            w.join()


def _rows(b):
    return b[1] - b[0] if isinstance(b, tuple) else int(b.numel())


def ranges(n, batch):
    """Consecutive (start, end) batches of n rows."""
    return [(i, min(i + batch, n)) for i in range(0, n, batch)]


def readers(run):
    """Reader threads for a job: the node's CPUs when a GPU computes; one
    on the CPU, where torch's own threads compute on those CPUs and the
    reader only reads ahead of them."""
    return run.cpus if run.cuda else 1
