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
        self.assertIn("tensor 'x' has 8 data bytes, shape [4] of F32 needs 16", str(e.exception))

    def write_raw(self, header, data_len):
        h = json.dumps(header).encode()
        with open(self.path, "wb") as f:
            f.write(struct.pack("<Q", len(h)) + h + b"\0" * data_len)

    def test_tensors_must_tile_the_data(self):
        # As the reference safetensors library: in offset order each tensor
        # begins where the one before ends, the first at 0, the last at the
        # end of the file; a bias inside the weight's bytes loaded silently.
        def t(dtype, shape, b, e):
            return {"dtype": dtype, "shape": shape, "data_offsets": [b, e]}
        cases = [
            ("bias inside weight", {"weight": t("F32", [16], 0, 64), "bias": t("F32", [8], 8, 40)}, 64,
             "tensor 'bias' [8, 40) overlaps tensor 'weight' [0, 64)"),
            ("same bytes twice", {"a": t("U8", [4], 0, 4), "b": t("U8", [4], 0, 4)}, 4,
             "tensor 'b' [0, 4) overlaps tensor 'a' [0, 4)"),
            ("gap between", {"a": t("U8", [2], 0, 2), "b": t("U8", [2], 4, 6)}, 6,
             "data bytes [2, 4) between tensor 'a' [0, 2) and tensor 'b' [4, 6) belong to no tensor"),
            ("gap before", {"a": t("U8", [2], 2, 4)}, 4, "data bytes [0, 2) before tensor 'a' [2, 4) belong to no tensor"),
            ("bytes after", {"a": t("U8", [2], 0, 2)}, 5, "data bytes [2, 5) after the last tensor 'a' [0, 2) belong to no tensor"),
            ("overflowing shape", {"a": t("F32", [2147483648, 2147483648], 0, 0)}, 0,
             "shape [2147483648, 2147483648] of F32 is larger than any file (overflows 64-bit byte count)"),
            ("unknown dtype", {"a": t("Q7", [1], 0, 1)}, 1, "unknown dtype 'Q7'"),
            ("not an entry", {"a": [1, 2]}, 0, "is not {dtype, shape, data_offsets}"),
        ]
        for name, header, data_len, want in cases:
            with self.subTest(name):
                self.write_raw(header, data_len)
                with self.assertRaises(SystemExit) as e:
                    SafeTensors(self.path)
                self.assertIn(self.path, str(e.exception))
                self.assertIn(want, str(e.exception))

    def test_exact_tiling_is_read(self):
        # Header order is not offset order; empty tensors sit anywhere on
        # a boundary; the metadata is no tensor.
        header = {"__metadata__": {"k": "v"}, "z": {"dtype": "U8", "shape": [2], "data_offsets": [0, 2]},
                  "e": {"dtype": "F32", "shape": [0, 3], "data_offsets": [2, 2]},
                  "a": {"dtype": "I16", "shape": [1], "data_offsets": [2, 4]}}
        self.write_raw(header, 4)
        f = SafeTensors(self.path)
        self.assertEqual(list(f.tensor("z")), [0, 0])
        self.assertEqual(tuple(f.tensor("e").shape), (0, 3))


if __name__ == "__main__":
    unittest.main()
