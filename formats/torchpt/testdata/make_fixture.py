"""Writes state_dict.pth, a torch.save'd state dict, and state_dict.json,
its tensors as lists, for formats/torchpt's tests.

    /usr/bin/python3 formats/torchpt/testdata/make_fixture.py formats/torchpt/testdata

Needs Debian's python3-torch. The dict holds what a torchvision checkpoint
holds: float32 weights, a float16 and a bfloat16 tensor, an int64
num_batches_tracked, a tensor that views part of a larger storage (offset
and stride), two tensors sharing one storage, and the _metadata attribute
of an OrderedDict state dict.
"""
import collections
import json
import os
import sys

import torch

out = sys.argv[1]
torch.manual_seed(0)
base = torch.randn(4, 6)
sd = collections.OrderedDict()
sd["conv1.weight"] = torch.randn(3, 2, 3, 3)
sd["bn1.running_var"] = torch.rand(3) + 0.5
sd["bn1.num_batches_tracked"] = torch.tensor(7, dtype=torch.int64)
sd["fc.weight"] = base.t()  # a transposed view: stride (1, 6)
sd["fc.bias"] = base[1, 2:5]  # offset 8 into base's storage
sd["half"] = torch.randn(5).half()
sd["bf16"] = torch.randn(2, 2).bfloat16()
sd._metadata = collections.OrderedDict({"": {"version": 1}, "bn1": {"version": 2}})
torch.save(sd, os.path.join(out, "state_dict.pth"))
ref = {}
for k, v in sd.items():
    ref[k] = {"shape": list(v.shape), "values": v.float().reshape(-1).tolist(), "dtype": str(v.dtype)}
with open(os.path.join(out, "state_dict.json"), "w") as f:
    json.dump({"torch": torch.__version__, "tensors": ref}, f, indent=1)
