"""JPEG stores: the images decode to what was encoded (torchvision or
PIL alike), and the loader's batches of a JPEG store equal those of the
same images stored raw."""
import json
import os
import struct
import tempfile
import unittest

import numpy as np
import torch

import gatepipe_worker.storage as storage
from gatepipe_worker.loader import Batches, ranges
from gatepipe_worker.storage import Inputs, Store

try:
    from torchvision.io import encode_jpeg
except ImportError:  # the worker decodes with PIL then; so can the fixture
    encode_jpeg = None


def jpeg_bytes(img):
    if encode_jpeg is not None:
        return bytes(encode_jpeg(img, quality=90).numpy())
    import io
    from PIL import Image
    b = io.BytesIO()
    a = img.permute(1, 2, 0).numpy()
    Image.fromarray(a[:, :, 0] if a.shape[2] == 1 else a).save(b, format="JPEG", quality=90)
    return b.getvalue()


def write_tensors(path, tensors):
    head, data, off = {}, b"", 0
    for name, (dtype, a) in tensors.items():
        raw = a.tobytes()
        head[name] = {"dtype": dtype, "shape": list(a.shape), "data_offsets": [off, off + len(raw)]}
        data += raw
        off += len(raw)
    h = json.dumps(head).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + data)


def jpeg_store(d, images):
    """A JPEG store's train split of images (uint8 [N, 3, H, W])."""
    blobs = [jpeg_bytes(img) for img in images]
    spans, off = [], 0
    for b in blobs:
        spans.append((off, len(b)))
        off += len(b)
    with open(os.path.join(d, "train.jpeg"), "wb") as f:
        f.write(b"".join(blobs))
    n, c = len(images), images.shape[1]
    write_tensors(os.path.join(d, "train.safetensors"), {
        "xjpeg": ("I64", np.array(spans, dtype=np.int64)),
        "y": ("I64", np.zeros(n, dtype=np.int64)),
        "index": ("I64", np.arange(n, dtype=np.int64))})
    meta = {"shape": list(images.shape[1:]), "encoding": "jpeg", "quality": 90, "splits": {"train": n},
            "normalize": {"scale": 1 / 255, "mean": [0.4, 0.5, 0.6][:c], "std": [0.2, 0.25, 0.3][:c]}}
    with open(os.path.join(d, "meta.json"), "w") as f:
        json.dump(meta, f)
    return Store(d)


class JPEGStoreTest(unittest.TestCase):
    def setUp(self):
        ys, xs = torch.meshgrid(torch.arange(24), torch.arange(32), indexing="ij")
        self.images = torch.stack([torch.stack([(40 + xs + i) % 256, 60 + 2 * ys, 90 + (xs + ys) // 2]).to(torch.uint8)
                                   for i in range(21)])
        self.dir = tempfile.TemporaryDirectory()
        self.store = jpeg_store(self.dir.name, self.images)

    def tearDown(self):
        self.dir.cleanup()

    def test_rows_decode_close_to_the_images(self):
        x = self.store.split("train").tensor("x")
        self.assertEqual(tuple(x.shape), (21, 3, 24, 32))
        got = x[2:5]
        self.assertEqual(got.dtype, torch.uint8)
        err = (got.float() - self.images[2:5].float()).abs().mean().item()
        self.assertLess(err, 2.0)
        torch.testing.assert_close(x[torch.tensor([4, 2])], torch.stack([got[2], got[0]]))

    def test_pil_decodes_as_torchvision_does(self):
        x = self.store.split("train").tensor("x")
        keep = storage._jpeg_decoder
        import builtins
        real_import = builtins.__import__

        def no_torchvision(name, *a, **k):
            if name.startswith("torchvision"):
                raise ImportError(name)
            return real_import(name, *a, **k)
        builtins.__import__ = no_torchvision
        try:
            pil = storage._jpeg_decoder()
        finally:
            builtins.__import__ = real_import
        self.assertIs(keep, storage._jpeg_decoder)
        for k in (0, 7, 20):
            diff = (pil(x.row(k)).float() - x.decode(x.row(k)).float()).abs().max().item()
            self.assertLessEqual(diff, 1.0)

    def test_batches_equal_the_raw_images_decoded(self):
        x = self.store.split("train").tensor("x")
        decoded = x[0:21]
        inputs = Inputs(self.store, None, torch.device("cpu"))
        for batches in (ranges(21, 4), [torch.tensor([5, 1, 19]), torch.tensor([0, 20])]):
            for threads in (1, 3):
                jpeg = [b.clone() for _, b in Batches(x, batches, inputs, threads=threads)]
                raw = [b.clone() for _, b in Batches(decoded, batches, inputs, threads=threads)]
                for a, b in zip(jpeg, raw):
                    torch.testing.assert_close(a, b)
                    self.assertTrue(a.is_contiguous(memory_format=torch.channels_last))
                    self.assertTrue(b.is_contiguous())

    def test_channels_last_staging_gives_the_same_inputs(self):
        # The readers decode into channels-last buffers; the input made
        # from them (on the CPU, or by a GPU) is the input from [C, H, W].
        x = self.store.split("train").tensor("x")
        rows = torch.tensor([3, 0, 17, 9])
        want = x[rows]
        self.assertTrue(want.is_contiguous())
        for device in (False, True):
            staged = x.staging(8, device=device)
            self.assertEqual(tuple(staged.shape), (8, 3, 24, 32))
            self.assertEqual(staged.stride()[1], 1)  # channels last
            self.assertTrue(torch.equal(x.read_into(rows, staged[:4]), want))
        got = x.read_into(rows, x.staging(8)[:4])
        inputs = Inputs(self.store, None, torch.device("cpu"))
        a, buf = inputs.make(got)
        b = inputs.make(want)[0]
        # On the CPU the input keeps the staging's layout: the same numbers
        # (the same two operations on each), laid out channels last.
        self.assertTrue(torch.equal(a, b))
        self.assertTrue(a.is_contiguous(memory_format=torch.channels_last))
        self.assertFalse(a.is_contiguous())
        self.assertTrue(b.is_contiguous())
        # A reused buffer of the other layout is not written into.
        c, buf2 = inputs.make(want, buf)
        self.assertIsNot(buf2, buf)
        self.assertTrue(c.is_contiguous() and torch.equal(c, b))
        self.assertIs(inputs.make(got[:3], buf)[1], buf)
        pre = {"size": [16, 16], "mean": [0.5, 0.5, 0.5], "std": [0.25, 0.25, 0.25]}
        inputs = Inputs(self.store, pre, torch.device("cpu"))
        a = inputs.make(got)[0]
        torch.testing.assert_close(a, inputs.make(want)[0])
        self.assertTrue(a.is_contiguous())

    def test_grey_images_stage_and_load(self):
        grey = self.images[:, 1:2].contiguous()
        with tempfile.TemporaryDirectory() as d:
            store = jpeg_store(d, grey)
            x = store.split("train").tensor("x")
            rows = torch.tensor([2, 11, 0])
            want = x[rows]
            self.assertEqual(tuple(want.shape), (3, 1, 24, 32))
            self.assertLess((want.float() - grey[rows].float()).abs().mean().item(), 2.0)
            self.assertTrue(torch.equal(x.read_into(rows, x.staging(4, device=True)[:3]), want))
            inputs = Inputs(store, None, torch.device("cpu"))
            for a, b in zip([b.clone() for _, b in Batches(x, ranges(21, 5), inputs)],
                            [b.clone() for _, b in Batches(x[0:21], ranges(21, 5), inputs)]):
                torch.testing.assert_close(a, b)

    @unittest.skipUnless(torch.cuda.is_available(), "needs CUDA (scripts/gpu-check.sh runs it on a GPU)")
    def test_the_gpu_loader_equals_the_cpu_loader(self):
        # Pinned channels-last staging, copied to the device, made there.
        x = self.store.split("train").tensor("x")
        batches = [torch.tensor([5, 1, 19]), (0, 8), (8, 21)]
        cpu = Inputs(self.store, None, torch.device("cpu"))
        gpu = Inputs(self.store, None, torch.device("cuda"))
        want = [b.clone() for _, b in Batches(x, batches, cpu, threads=2)]
        got = [b.cpu() for _, b in Batches(x, batches, gpu, threads=2)]
        for a, b in zip(got, want):
            torch.testing.assert_close(a, b)


if __name__ == "__main__":
    unittest.main()
