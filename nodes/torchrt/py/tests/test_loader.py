"""loader: batches come in order, equal to the inputs made one by one,
from any number of reader threads; errors reach the consumer; rows are
written as they come."""
import os
import tempfile
import unittest

import numpy as np
import torch

from gatepipe_worker.loader import Batches, ranges
from gatepipe_worker.storage import Inputs, RowWriter, SafeTensors


class FakeStore:
    def __init__(self, shape):
        self.shape = shape
        self.meta = {"normalize": {"scale": 1 / 255, "mean": [0.4, 0.5, 0.6][:shape[0]], "std": [0.2, 0.25, 0.3][:shape[0]]}}


class BatchesTest(unittest.TestCase):
    def setUp(self):
        g = torch.Generator().manual_seed(3)
        self.x = torch.randint(0, 256, (53, 3, 5, 4), dtype=torch.uint8, generator=g)
        self.inputs = Inputs(FakeStore([3, 5, 4]), None, torch.device("cpu"))

    def want(self, rows):
        x = self.x[rows].float()
        return (x * (1 / 255) - self.inputs.mean) / self.inputs.std

    def test_ranges_in_order_whatever_the_threads(self):
        for threads in (1, 2, 5):
            got = [(k, x.clone()) for k, x in Batches(self.x, ranges(53, 8), self.inputs, threads=threads)]
            self.assertEqual([k for k, _ in got], list(range(7)))
            for k, x in got:
                a, b = k * 8, min(k * 8 + 8, 53)
                self.assertEqual(x.shape[0], b - a)
                torch.testing.assert_close(x, self.want(torch.arange(a, b)), rtol=1e-6, atol=1e-6)

    def test_under_inference_mode(self):
        # The worker's jobs iterate inside inference_mode; the readers are not.
        with torch.inference_mode():
            got = [x.clone() for _, x in Batches(self.x, ranges(53, 16), self.inputs, threads=2)]
        torch.testing.assert_close(torch.cat(got), self.want(torch.arange(53)), rtol=1e-6, atol=1e-6)

    def test_index_batches(self):
        g = torch.Generator().manual_seed(5)
        idx = [torch.randperm(53, generator=g)[:11] for _ in range(9)]
        got = [x.clone() for _, x in Batches(self.x, idx, self.inputs, threads=3)]
        for rows, x in zip(idx, got):
            torch.testing.assert_close(x, self.want(rows), rtol=1e-6, atol=1e-6)

    def test_channels_last_inputs_for_convolutional_encoders(self):
        # Asked for channels last (a convolutional encoder), the readers
        # make the input in that layout from [C, H, W] rows: the numbers of
        # the contiguous input, exactly (the same two operations on each).
        last = Inputs(FakeStore([3, 5, 4]), None, torch.device("cpu"), channels_last=True)
        for batches in (ranges(53, 8), [torch.tensor([7, 0, 52])]):
            for threads in (1, 3):
                got = [x.clone(memory_format=torch.preserve_format) for _, x in Batches(self.x, batches, last, threads=threads)]
                want = [x.clone() for _, x in Batches(self.x, batches, self.inputs, threads=threads)]
                for a, b in zip(got, want):
                    self.assertTrue(a.is_contiguous(memory_format=torch.channels_last))
                    self.assertFalse(a.is_contiguous())
                    self.assertTrue(b.is_contiguous())
                    self.assertTrue(torch.equal(a, b))
        # Grey images and vectors have one layout: they stay contiguous.
        grey = Inputs(FakeStore([1, 5, 4]), None, torch.device("cpu"), channels_last=True)
        x = grey.make(self.x[:4, :1].contiguous())[0]
        self.assertTrue(x.is_contiguous())

    def test_buffers_are_reused(self):
        seen = set()
        for _, x in Batches(self.x, ranges(53, 4), self.inputs, threads=2):
            seen.add(x.data_ptr())
        self.assertLessEqual(len(seen), 4)  # the ring's depth: threads + 2

    def test_the_ring_is_bounded(self):
        import gatepipe_worker.loader as loader
        keep = loader.RING_BYTES
        loader.RING_BYTES = 3 * 8 * self.x[0].numel()  # three buffers of 8 rows
        try:
            b = Batches(self.x, [torch.arange(8)] * 5, self.inputs, threads=6)
            self.assertEqual((b.depth, b.threads), (3, 2))
            got = [x.clone() for _, x in b]
            self.assertEqual(len(got), 5)
            torch.testing.assert_close(got[4], self.want(torch.arange(8)), rtol=1e-6, atol=1e-6)
        finally:
            loader.RING_BYTES = keep

    def test_a_bad_batch_fails_the_consumer(self):
        bad = [torch.tensor([0, 1]), torch.tensor([2, 99])]
        with self.assertRaises(IndexError):
            for _ in Batches(self.x, bad, self.inputs, threads=2):
                pass

    def test_stopping_early_stops_the_readers(self):
        b = Batches(self.x, ranges(53, 1), self.inputs, threads=3)
        for k, _ in b:
            if k == 2:
                break
        for w in b.workers:
            w.join(timeout=5)
            self.assertFalse(w.is_alive())


class RowWriterTest(unittest.TestCase):
    def test_rows_as_they_come(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "f.safetensors")
            w = RowWriter(path, "x", 5, 3)
            x = torch.arange(15, dtype=torch.float32).view(5, 3)
            w.write(x[:2])
            self.assertFalse(os.path.exists(path))
            w.write(x[2:])
            w.close()
            self.assertTrue(np.array_equal(SafeTensors(path).numpy("x"), x.numpy()))

    def test_short_file_is_refused(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "f.safetensors")
            w = RowWriter(path, "x", 5, 3)
            w.write(torch.zeros(2, 3))
            with self.assertRaises(SystemExit):
                w.close()
            self.assertEqual(os.listdir(d), [])


if __name__ == "__main__":
    unittest.main()
