"""Examples: which splits are indexed on the device and which the loader reads."""
import unittest

import torch

from gatepipe_worker.train import resident


class TestResident(unittest.TestCase):
    def test_devices(self):
        # The inputs are made on "cuda", the split moved there is on
        # "cuda:0": the same GPU. Comparing the two devices for equality
        # sent every GPU-resident split to the host loader, whose
        # index_select then failed on the first CUDA run (H200,
        # 2026-11-28); CPU torch never sees the case.
        cases = [
            ("cuda:0", "cuda", True),
            ("cuda", "cuda", True),
            ("cuda:0", "cuda:0", True),
            ("cpu", "cuda", False),  # kept on the host: the loader reads it
            ("cpu", "cpu", False),  # the CPU loader makes the inputs
        ]
        for stored, inputs, want in cases:
            with self.subTest(stored=stored, inputs=inputs):
                self.assertEqual(resident(torch.device(stored), torch.device(inputs)), want)


if __name__ == "__main__":
    unittest.main()
