"""The SWMR writer of `cargo xtask bench --browser`'s live-view figure, h5py (libhdf5).

Usage: live_writer.py PATH FLUSHES. Writes /live/signal (float64, growable, 100 values) and
turns SWMR on, prints `ready`, waits for a line on stdin, then FLUSHES times: sleeps 200 to
500 ms (so flushes land at every phase of the page's polling), appends 10 values, flushes, and
prints one JSON line: the dataset's length and the wall-clock time (ms since the epoch) the
flush returned.
"""

import json
import random
import sys
import time

import h5py
import numpy as np

path, flushes = sys.argv[1], int(sys.argv[2])
rng = random.Random(37)
with h5py.File(path, "w", libver="latest") as f:
    d = f.create_dataset(
        "live/signal", shape=(100,), maxshape=(None,), chunks=(64,), dtype="<f8"
    )
    d[:] = np.sin(np.arange(100) / 10.0)
    f.swmr_mode = True
    d.flush()
    print("ready", flush=True)
    sys.stdin.readline()
    for _ in range(flushes):
        time.sleep(rng.uniform(0.2, 0.5))
        n = d.shape[0]
        d.resize((n + 10,))
        d[n:] = np.sin(np.arange(n, n + 10) / 10.0)
        d.flush()
        done = time.time() * 1000.0
        print(json.dumps({"length": n + 10, "flushed_ms": done}), flush=True)
