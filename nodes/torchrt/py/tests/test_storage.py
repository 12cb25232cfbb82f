"""storage: safetensors written and read back as the format specifies."""
import json
import os
import struct
import tempfile
import unittest

import torch

from gatepipe_worker.storage import SafeTensors, write_safetensors


class SafeTensorsTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "t.safetensors")

    def tearDown(self):
        self.dir.cleanup()

    def test_round_trip(self):
        x = torch.arange(12, dtype=torch.float32).view(3, 4) / 7
        y = torch.tensor([5, -2, 9], dtype=torch.int64)
        u = torch.tensor([[0, 255]], dtype=torch.uint8)
        write_safetensors(self.path, {"x": x, "y": y, "u": u}, {"classes": 3})
        f = SafeTensors(self.path)
        self.assertTrue(torch.equal(f.tensor("x"), x))
        self.assertTrue(torch.equal(f.tensor("y"), y))
        self.assertTrue(torch.equal(f.tensor("u"), u))
        self.assertTrue(torch.equal(f.tensor("x", (1, 3)), x[1:3]))
        self.assertEqual(f.header["__metadata__"], {"classes": "3"})
        self.assertFalse(os.path.exists(self.path + ".tmp"))

    def test_layout(self):
        # 8-byte little-endian header length, a JSON header padded to 8
        # bytes, tensors in name order at their data_offsets.
        write_safetensors(self.path, {"b": torch.ones(2), "a": torch.zeros(1, dtype=torch.int64)})
        with open(self.path, "rb") as f:
            raw = f.read()
        (n,) = struct.unpack("<Q", raw[:8])
        self.assertEqual(n % 8, 0)
        header = json.loads(raw[8:8 + n])
        self.assertEqual(header["a"], {"dtype": "I64", "shape": [1], "data_offsets": [0, 8]})
        self.assertEqual(header["b"], {"dtype": "F32", "shape": [2], "data_offsets": [8, 16]})
        self.assertEqual(len(raw), 8 + n + 16)

    def test_damaged_files_are_refused(self):
        with open(self.path, "wb") as f:
            f.write(b"\x01\x02")
        with self.assertRaises(SystemExit) as e:
            SafeTensors(self.path)
        self.assertIn("not a safetensors file", str(e.exception))
        with open(self.path, "wb") as f:
            f.write(struct.pack("<Q", 1 << 40) + b"{}")
        with self.assertRaises(SystemExit) as e:
            SafeTensors(self.path)
        self.assertIn("header of", str(e.exception))
        header = json.dumps({"x": {"dtype": "F32", "shape": [4], "data_offsets": [0, 8]}}).encode()
        with open(self.path, "wb") as f:
            f.write(struct.pack("<Q", len(header)) + header + b"\0" * 8)
        with self.assertRaises(SystemExit) as e:
            SafeTensors(self.path).tensor("x")
        self.assertIn("do not hold F32 [4]", str(e.exception))


if __name__ == "__main__":
    unittest.main()
