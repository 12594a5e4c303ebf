"""Both sides of `cargo xtask bench --python`: the `h5chunk` Python module against h5py (and
xarray's h5netcdf and netcdf4 engines), in the same venv, on the same files and values.

    python python_bench.py make DIR KEY=VALUE...
    python python_bench.py run SIDE WORKLOAD DIR KEY=VALUE...

`make` writes the files the read workloads share: `grid.h5` (h5py, default options: a 2-D
float32 dataset `plain`, unfiltered, and `deflate`, shuffle + gzip 4, both SIDE x SIDE in
CHUNK x CHUNK chunks) and `climate.nc` (the netCDF4 package: `tas`, zlib + shuffle, and `pr`,
unfiltered, time x lat x lon float32, with their coordinate variables).

`run` times one workload on one side (h5chunk, h5py; for `xarray` the engines h5chunk,
h5netcdf, netcdf4) and prints one line per row:

    RESULT row=R side=S seconds=T check=C

where `check` is a figure of the values (a sum) that every side must give alike: xtask fails
the run when they differ. Workloads:

- `append`: rows `append1` (APPENDS appends of one row of 8 float64, a flush every 100;
  h5chunk's `Dataset.append` against h5py's `resize` then assignment, h5py's default options
  on both sides) and `appendchunk` (CHUNK_APPENDS appends of one chunk's 1,024 rows each).
  Timed from the file's creation to its close; the check reads the file back with h5py.
  h5chunk's default durability, `"flush"`, journals its flushes (a killed process loses nothing
  flushed) but does not `fsync`, as libhdf5's flush does not (which keeps no journal either).
  Side `h5chunk-sync` is h5chunk with `durability="sync"`: three `fsync`s a flush, so that every
  flush survives a power cut too.
- `reads`: rows `elements` (ELEMENTS random single elements `d[i, j]` of `plain`) and
  `windows` (WINDOWS random 64x64 windows of it). The file's open is not timed.
- `threads`: rows `windowsT` (THREAD_WINDOWS random 64x64 windows of `plain` shared round-robin
  by T threads of one process) and `wholeT` (the `deflate` dataset read whole, its rows split
  in T parts, one per thread) for each T in THREADS; h5chunk's file is opened with
  `threads=1`, so Python's threads are the only parallelism on both sides.
- `xarray`: row `xarray`: `xr.open_dataset(path, engine=SIDE).load()` of `climate.nc`, the
  open included, after one untimed open and load of `warm.nc` (a tiny file of the same
  layout), so that the imports xarray and the engine make on first use are not timed.
"""

import os
import sys
import threading
import time

import numpy as np

WINDOW = 64
LOG_CHUNK = 1024
LOG_FLUSH = 100
SEED = 35


def parse(args):
    out = {}
    for a in args:
        k, v = a.split("=", 1)
        out[k] = [int(x) for x in v.split(",")] if "," in v or k == "threads" else int(v)
    return out


def grid_values(side):
    i = np.arange(side * side, dtype=np.uint64) % np.uint64(1_000_003)
    return (i.astype(np.float32) * np.float32(0.25)).reshape(side, side)


def make(d, sz):
    import h5py

    side, chunk = sz["side"], sz["chunk"]
    v = grid_values(side)
    with h5py.File(os.path.join(d, "grid.h5"), "w") as f:
        f.create_dataset("plain", data=v, chunks=(chunk, chunk))
        f.create_dataset("deflate", data=v, chunks=(chunk, chunk), shuffle=True,
                         compression="gzip", compression_opts=4)
    write_nc(os.path.join(d, "climate.nc"), sz["nc_time"], sz["nc_lat"], sz["nc_lon"])
    write_nc(os.path.join(d, "warm.nc"), 2, 3, 4)


def write_nc(path, nt, ny, nx):
    import netCDF4

    with netCDF4.Dataset(path, "w", format="NETCDF4") as nc:
        nc.createDimension("time", None)
        nc.createDimension("lat", ny)
        nc.createDimension("lon", nx)
        t = nc.createVariable("time", "f8", ("time",))
        t.units = "days since 2000-01-01"
        t[:] = np.arange(nt, dtype="f8")
        lat = nc.createVariable("lat", "f4", ("lat",))
        lat.units = "degrees_north"
        lat[:] = np.linspace(-89.5, 89.5, ny, dtype="f4")
        lon = nc.createVariable("lon", "f4", ("lon",))
        lon.units = "degrees_east"
        lon[:] = np.linspace(0.5, 359.5, nx, dtype="f4")
        y = np.arange(ny, dtype="f4").reshape(1, ny, 1)
        x = np.arange(nx, dtype="f4").reshape(1, 1, nx)
        tas = nc.createVariable("tas", "f4", ("time", "lat", "lon"), zlib=True, complevel=4,
                                shuffle=True, chunksizes=(1, ny, nx))
        tas.units = "K"
        pr = nc.createVariable("pr", "f4", ("time", "lat", "lon"), chunksizes=(1, ny, nx))
        pr.units = "kg m-2 s-1"
        for i in range(nt):
            tas[i] = 250.0 + ((y * 0.5 + x * 0.25 + i) % 50.0)
            pr[i] = ((y + 2 * x + 3 * i) % 97.0) * 1e-5


def result(row, side, seconds, check):
    print(f"RESULT row={row} side={side} seconds={seconds:.6f} check={float(check)!r}", flush=True)


def readback(path):
    """The sum of an appended log's values, read back with h5py (both sides' files)."""
    import h5py

    with h5py.File(path, "r") as f:
        return float(f["log"][...].sum(dtype=np.float64))


def appends(side, d, sz):
    path = os.path.join(d, f"append_{side}.h5")
    k = np.arange(8, dtype=np.float64)
    for row, n, per in (("append1", sz["appends"], 1), ("appendchunk", sz["chunk_appends"], LOG_CHUNK)):
        block = np.empty((per, 8), dtype=np.float64)
        base = np.arange(per, dtype=np.float64).reshape(per, 1)
        if side.startswith("h5chunk"):
            import h5chunk

            durability = "sync" if side == "h5chunk-sync" else None
            t0 = time.perf_counter()
            with h5chunk.File(path, "w", durability=durability) as f:
                ds = f.create_dataset("log", shape=(0, 8), maxshape=(None, 8),
                                      chunks=(LOG_CHUNK, 8), dtype="f8")
                for i in range(n):
                    np.add(base, k + i * per, out=block)
                    ds.append(block if per > 1 else block[0])
                    if (i + 1) % LOG_FLUSH == 0:
                        f.flush()
            s = time.perf_counter() - t0
        else:
            import h5py

            t0 = time.perf_counter()
            with h5py.File(path, "w") as f:
                ds = f.create_dataset("log", shape=(0, 8), maxshape=(None, 8),
                                      chunks=(LOG_CHUNK, 8), dtype="f8")
                for i in range(n):
                    np.add(base, k + i * per, out=block)
                    ds.resize((i + 1) * per, axis=0)
                    ds[i * per:(i + 1) * per] = block
                    if (i + 1) % LOG_FLUSH == 0:
                        f.flush()
            s = time.perf_counter() - t0
        result(row, side, s, readback(path))
        os.remove(path)


def open_grid(side, d):
    path = os.path.join(d, "grid.h5")
    if side == "h5chunk":
        import h5chunk

        return h5chunk.File(path, "r", threads=1)
    import h5py

    return h5py.File(path, "r")


def corners(n, side, rng):
    return rng.integers(0, side - WINDOW + 1, size=(n, 2))


def reads(side, d, sz):
    f = open_grid(side, d)
    ds = f["plain"]
    s_ = sz["side"]
    rng = np.random.default_rng(SEED)
    idx = [(int(i), int(j)) for i, j in rng.integers(0, s_, size=(sz["elements"], 2))]
    t0 = time.perf_counter()
    got = [ds[i, j] for i, j in idx]
    s = time.perf_counter() - t0
    result("elements", side, s, np.asarray(got, dtype=np.float64).sum())
    cs = [(int(i), int(j)) for i, j in corners(sz["windows"], s_, rng)]
    t0 = time.perf_counter()
    sums = [ds[i:i + WINDOW, j:j + WINDOW] for i, j in cs]
    s = time.perf_counter() - t0
    result("windows", side, s, sum(float(w.sum(dtype=np.float64)) for w in sums))
    f.close()


def in_threads(n, work):
    """Runs work(t) in n threads (n == 1: in this one); the wall-clock seconds."""
    errors = []

    def body(t):
        try:
            work(t)
        except BaseException as e:  # noqa: BLE001 - raised below, in the main thread
            errors.append(e)

    t0 = time.perf_counter()
    if n == 1:
        body(0)
    else:
        ts = [threading.Thread(target=body, args=(t,)) for t in range(n)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    s = time.perf_counter() - t0
    if errors:
        raise errors[0]
    return s


def threads(side, d, sz):
    f = open_grid(side, d)
    plain, deflate = f["plain"], f["deflate"]
    s_ = sz["side"]
    cs = [(int(i), int(j)) for i, j in corners(sz["thread_windows"], s_, np.random.default_rng(SEED + 1))]
    for n in sz["threads"]:
        sums = np.zeros(len(cs))

        def windows(t):
            for w in range(t, len(cs), n):
                i, j = cs[w]
                sums[w] = plain[i:i + WINDOW, j:j + WINDOW].sum(dtype=np.float64)

        s = in_threads(n, windows)
        result(f"windows{n}", side, s, sums.sum())
        parts = np.zeros(n)
        bounds = [s_ * t // n for t in range(n + 1)]

        def whole(t):
            parts[t] = deflate[bounds[t]:bounds[t + 1]].sum(dtype=np.float64)

        s = in_threads(n, whole)
        result(f"whole{n}", side, s, parts.sum())
    f.close()


def xarray_load(side, d, sz):
    import xarray as xr

    # One open and load of another, tiny file first: the imports each engine and xarray make
    # on first use (the backends' entry points, dask, the engine's library) are not timed.
    xr.open_dataset(os.path.join(d, "warm.nc"), engine=side).load().close()
    path = os.path.join(d, "climate.nc")
    t0 = time.perf_counter()
    ds = xr.open_dataset(path, engine=side).load()
    s = time.perf_counter() - t0
    check = sum(float(ds[v].values.astype(np.float64).sum()) for v in ("tas", "pr", "lat", "lon"))
    check += float(ds["time"].values.astype("datetime64[D]").astype(np.int64).sum())
    ds.close()
    result("xarray", side, s, check)


def main():
    if sys.argv[1] == "make":
        make(sys.argv[2], parse(sys.argv[3:]))
        return
    side, workload, d = sys.argv[2], sys.argv[3], sys.argv[4]
    sz = parse(sys.argv[5:])
    {"append": appends, "reads": reads, "threads": threads, "xarray": xarray_load}[workload](side, d, sz)


if __name__ == "__main__":
    main()
