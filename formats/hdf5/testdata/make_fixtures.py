"""Writes the HDF5 fixtures of formats/hdf5's tests with h5py (Debian's
python3-h5py). Run from this directory: python3 make_fixtures.py."""
import h5py
import numpy as np

rng = np.random.default_rng(7)
rgb = rng.integers(0, 256, size=(3, 6, 8), dtype=np.uint8)
depth = (rng.random((6, 8), dtype=np.float32) * 9.5).astype(np.float32)

# fast-depth's NYU Depth v2 layout: "rgb" (3, H, W) uint8 and "depth"
# (H, W) float32 at the root, contiguous, as h5py writes by default.
with h5py.File("contiguous.h5", "w") as f:
    f.create_dataset("rgb", data=rgb)
    f.create_dataset("depth", data=depth)

# The same arrays chunked (chunks that do not divide the shape), deflated
# and shuffled, in a nested group, plus a big-endian float64 copy.
with h5py.File("chunked.h5", "w") as f:
    g = f.create_group("nested/inner")
    g.create_dataset("rgb", data=rgb, chunks=(2, 4, 3), compression="gzip", shuffle=True)
    g.create_dataset("depth", data=depth, chunks=(5, 5), compression="gzip", compression_opts=9)
    f.create_dataset("depth_be", data=depth.astype(">f8"), chunks=(3, 8), fletcher32=True)
    f.create_dataset("label", data=np.arange(48, dtype=np.int16).reshape(6, 8))

# Many entries in one group: a symbol table B-tree with several nodes.
with h5py.File("many.h5", "w") as f:
    for i in range(40):
        f.create_dataset(f"d{i:02d}", data=np.full((2,), i, dtype=np.uint8))

# Creation order tracked (track_order=True): version 2 object headers,
# which the reader refuses, naming the option.
with h5py.File("track_order.h5", "w", track_order=True) as f:
    f.create_dataset("rgb", data=rgb)

rgb.tofile("rgb.bin")  # raw bytes, C order
depth.astype("<f4").tofile("depth.bin")  # little-endian float32
