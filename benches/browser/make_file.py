"""The 4 GiB remote file of `cargo xtask bench --browser`, written by h5py (libhdf5).

Shaped like an instrument's run: a group per scan, each with attributes, a 128 MiB frame stack
(float32, contiguous) and two small datasets, written scan after scan as data arrives, so each
scan's metadata lies next to its data, 128 MiB from the next. The frame stacks are sparse
(fill time "never"): only their first rows, and the rows the benchmark reads, are written, so
the file takes a few MiB on disk.

Usage: make_file.py PATH. Prints one JSON line: the file's size, the slice's dataset, start,
count, element count and the sum of its values (the check both readers must match), and the
tree (every path with its kind) that both must show.
"""

import json
import sys

import h5py
import numpy as np

SCANS = 33
ROWS, COLS = 32768, 1024  # 128 MiB of float32 per scan
SLICE_ROWS = 256  # 1 MiB of float32
path = sys.argv[1]
last = SCANS - 1
slice_start = ROWS // 2

with h5py.File(path, "w") as f:
    f.attrs["instrument"] = "bench-beamline"
    f.attrs["run"] = 37
    for k in range(SCANS):
        g = f.create_group(f"scan_{k:03d}")
        g.attrs["start_time"] = f"2026-11-27T00:{k % 60:02d}:00Z"
        g.attrs["exposure_s"] = 0.1 * (k + 1)
        g.attrs["sample"] = f"S{k % 5}"
        frames = g.create_dataset(
            "frames", shape=(ROWS, COLS), dtype="<f4", fill_time="never"
        )
        frames.attrs["units"] = "counts"
        rows = np.arange(4 * COLS, dtype="<f4").reshape(4, COLS) + k
        frames[0:4] = rows
        if k == last:
            r = np.arange(SLICE_ROWS * COLS, dtype="<f4").reshape(SLICE_ROWS, COLS)
            frames[slice_start : slice_start + SLICE_ROWS] = r / 1024.0 + k
        g.create_dataset("monitor", data=np.linspace(0.0, 1.0, 256) * (k + 1))
        g.create_dataset("temperature", data=np.full(16, 290.0 + k, dtype="<f4"))

with h5py.File(path, "r") as f:
    tree = []

    def visit(name, obj):
        kind = "dataset" if isinstance(obj, h5py.Dataset) else "group"
        tree.append(["/" + name, kind])

    f.visititems(visit)
    d = f[f"scan_{last:03d}/frames"]
    offset = d.id.get_offset()
    v = d[slice_start : slice_start + SLICE_ROWS]
    out = {
        "size": f.id.get_filesize(),
        "dataset": f"/scan_{last:03d}/frames",
        "start": [slice_start, 0],
        "count": [SLICE_ROWS, COLS],
        "elements": int(v.size),
        "sum": float(v.astype(np.float64).sum()),
        "slice_offset": offset + slice_start * COLS * 4,
        "tree": sorted(tree),
    }
print(json.dumps(out))
