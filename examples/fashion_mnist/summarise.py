#!/usr/bin/env python3
"""Summarise a gatepipe example store: split sizes and class balance.

Reads meta.json and the safetensors split files with the standard library
only, so it runs anywhere. Usage: summarise.py STORE_DIR OUT_JSON
"""
import json
import struct
import sys


def read_labels(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        y = header["y"]
        begin, end = y["data_offsets"]
        f.seek(8 + n + begin)
        data = f.read(end - begin)
    if y["dtype"] == "I64":
        return list(struct.unpack("<%dq" % (len(data) // 8), data))
    return list(struct.unpack("<%df" % (len(data) // 4), data))


def main():
    store, out = sys.argv[1], sys.argv[2]
    with open(store + "/meta.json") as f:
        meta = json.load(f)
    summary = {"format": meta["format"], "classes": meta.get("classes"), "splits": {}}
    for split in sorted(meta["splits"]):
        labels = read_labels("%s/%s.safetensors" % (store, split))
        counts = {}
        for label in labels:
            counts[int(label)] = counts.get(int(label), 0) + 1
        summary["splits"][split] = {"examples": len(labels), "per_class": counts}
    with open(out, "w") as f:
        json.dump(summary, f, indent=2, sort_keys=True)
    print("summarised %s: %s" % (meta["format"], {k: v["examples"] for k, v in summary["splits"].items()}))


if __name__ == "__main__":
    main()
