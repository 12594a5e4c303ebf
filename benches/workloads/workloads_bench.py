"""h5py's side of `cargo xtask bench --workloads` (see benches/src/bin/h5chunk-workloads.rs).

    python workloads_bench.py WORKLOAD DIR DURABILITY N...

The same operations, on the same values, as the h5chunk program, with h5py's default options;
DURABILITY is ignored (h5py has no such option: libhdf5 never fsyncs). Prints
`RESULT impl=h5py workload=W durability=default seconds=S check=C`.
"""

import os
import sys
import time

import h5py
import numpy as np

LOGGER_CHUNK = 1024
LOGGER_FLUSH = 100
WINDOW = 64
MASK = (1 << 64) - 1


def lcg(state):
    state = (state * 6364136223846793005 + 1442695040888963407) & MASK
    return state, state >> 33


def bulk_values(side):
    idx = np.arange(side * side, dtype=np.uint64) % np.uint64(1_000_003)
    return idx.astype(np.float32).reshape(side, side)


def frame_values(i, side):
    y = np.arange(side, dtype=np.uint64).reshape(side, 1)
    x = np.arange(side, dtype=np.uint64).reshape(1, side)
    return ((np.uint64(i * 7) + y * np.uint64(3) + x) & np.uint64(0x0FFF)).astype(np.uint16)


def main():
    workload, d = sys.argv[1], sys.argv[2]
    nums = [int(v) for v in sys.argv[4:]]
    bulk = os.path.join(d, "workloads_h5py_bulk.h5")
    if workload == "logger":
        (n,) = nums
        path = os.path.join(d, "workloads_h5py_logger.h5")
        row = np.zeros((1, 8), dtype=np.float64)
        k = np.arange(8, dtype=np.float64)
        t0 = time.perf_counter()
        with h5py.File(path, "w") as f:
            ds = f.create_dataset("log", shape=(0, 8), maxshape=(None, 8), chunks=(LOGGER_CHUNK, 8), dtype="f8")
            for i in range(n):
                row[0] = k + i
                ds.resize(i + 1, axis=0)
                ds[i : i + 1] = row
                if (i + 1) % LOGGER_FLUSH == 0:
                    f.flush()
        s = time.perf_counter() - t0
        with h5py.File(path, "r") as f:
            assert f["log"].shape == (n, 8)
            check = float(f["log"][n - 1].sum())
        os.remove(path)
    elif workload == "frames":
        frames, side = nums
        path = os.path.join(d, "workloads_h5py_frames.h5")
        t0 = time.perf_counter()
        with h5py.File(path, "w") as f:
            ds = f.create_dataset(
                "frames", shape=(0, side, side), maxshape=(None, side, side), chunks=(1, side, side),
                dtype="u2", shuffle=True, compression="gzip", compression_opts=4,
            )
            for i in range(frames):
                frame = frame_values(i, side)
                ds.resize(i + 1, axis=0)
                ds[i] = frame
        s = time.perf_counter() - t0
        with h5py.File(path, "r") as f:
            check = float(f["frames"][frames - 1].astype(np.float64).sum())
        os.remove(path)
    elif workload == "bulk":
        side, chunk = nums
        data = bulk_values(side)
        t0 = time.perf_counter()
        with h5py.File(bulk, "w") as f:
            f.create_dataset("data", data=data, chunks=(chunk, chunk))
        s = time.perf_counter() - t0
        check = float(os.path.getsize(bulk) >> 20)
    elif workload == "read":
        side, _chunk = nums
        buf = np.empty((side, side), dtype=np.float32)
        t0 = time.perf_counter()
        with h5py.File(bulk, "r") as f:
            f["data"].read_direct(buf)
        s = time.perf_counter() - t0
        if not np.array_equal(buf, bulk_values(side)):
            sys.exit("h5py: the bulk file reads back different values")
        check = float(buf.astype(np.float64).sum())
    elif workload == "windows":
        count, side = nums
        state = 42
        total = 0.0
        t0 = time.perf_counter()
        with h5py.File(bulk, "r") as f:
            ds = f["data"]
            for _ in range(count):
                state, r = lcg(state)
                state, c = lcg(state)
                r %= side - WINDOW + 1
                c %= side - WINDOW + 1
                w = ds[r : r + WINDOW, c : c + WINDOW]
                total += float(w[0, 0]) + float(w[-1, -1])
        s = time.perf_counter() - t0
        check = total
    elif workload == "clean":
        if os.path.exists(bulk):
            os.remove(bulk)
        s, check = 0.0, 0.0
    else:
        sys.exit(f"unknown workload {workload}")
    print(f"RESULT impl=h5py workload={workload} durability=default seconds={s:.6f} check={check}")


if __name__ == "__main__":
    main()
