"""`cargo xtask bench --refs`: kerchunk reference generation, h5chunk against kerchunk.

For each chunk index libhdf5 writes (v1 B-tree, extensible array, v2 B-tree, fixed array,
implicit) a file with one dataset of N chunks (default 1,000,000; one 4-byte element each) is
written by h5py once and kept under DIR. Then, on the same file, in one run:

- h5chunk: `h5chunk refs FILE -o OUT` as its own process (wall time of the whole process,
  peak RSS from wait4);
- kerchunk: `SingleHdf5ToZarr(FILE, inline_threshold=0).translate()` and the JSON written with
  ujson, in a Python process of its own; the time counts translate and dump only (not the
  interpreter's start or the imports), the peak RSS the whole process.

Both reference sets must name the same byte range for every chunk (kerchunk as the oracle);
the table gives seconds, peak RSS and the speedup. Exit status 1 when a speedup is below 10x
or the references differ.
"""
import argparse, json, os, subprocess, sys, time

KINDS = ["btree1", "earray", "btree2", "farray", "implicit"]

GEN = r"""
import sys, h5py, numpy as np
kind, n, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
a = np.arange(n, dtype="<i4")
side = int(round(n ** 0.5))
libver = "earliest" if kind == "btree1" else "latest"
with h5py.File(path + ".tmp", "w", libver=libver) as f:
    if kind in ("btree1", "earray"):
        d = f.create_dataset("data", shape=(n,), maxshape=(None,), chunks=(1,), dtype="<i4")
        d[...] = a
    elif kind == "btree2":
        d = f.create_dataset("data", shape=(side, side), maxshape=(None, None), chunks=(1, 1), dtype="<i4")
        d[...] = a[: side * side].reshape(side, side)
    elif kind == "farray":
        d = f.create_dataset("data", shape=(n,), chunks=(1,), dtype="<i4")
        d[...] = a
    elif kind == "implicit":
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_chunk((1,))
        dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)
        space = h5py.h5s.create_simple((n,))
        dsid = h5py.h5d.create(f.id, b"data", h5py.h5t.STD_I32LE, space, dcpl=dcpl)
        d = h5py.Dataset(dsid)
        d[...] = a
"""

KERCHUNK = r"""
import sys, time
from kerchunk.hdf import SingleHdf5ToZarr
import ujson
path, out = sys.argv[1], sys.argv[2]
t = time.perf_counter()
refs = SingleHdf5ToZarr(path, inline_threshold=0).translate()
with open(out, "w") as f:
    f.write(ujson.dumps(refs))
print(time.perf_counter() - t)
"""


# A launcher small enough not to count: a child's peak RSS as wait4 reports it starts at the
# size of the process it was forked from (Linux carries the pre-exec high-water mark), so the
# measured program is forked from this bare interpreter, not from the driver.
LAUNCH = r"""
import os, sys, time
t = time.perf_counter()
pid = os.fork()
if pid == 0:
    try:
        os.execv(sys.argv[1], sys.argv[1:])
    finally:
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
print(time.perf_counter() - t, usage.ru_maxrss, os.waitstatus_to_exitcode(status))
"""


def run_measured(cmd):
    """Run cmd; (wall seconds, peak RSS in MiB, its stdout)."""
    p = subprocess.run([sys.executable, "-S", "-c", LAUNCH, *cmd], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    wall, rss, code = p.stdout.strip().splitlines()[-1].split()
    if int(code) != 0:
        raise SystemExit(f"{cmd[0]} failed ({code}): {p.stderr}")
    lines = p.stdout.strip().splitlines()[:-1]
    return float(wall), int(rss) / 1024.0, "\n".join(lines)


def chunk_ranges(path):
    refs = json.load(open(path))
    refs = refs.get("refs", refs)
    return {k: (v[1], v[2]) for k, v in refs.items()
            if isinstance(v, list) and len(v) == 3 and not k.split("/")[-1].startswith(".")}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--h5chunk", required=True)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--chunks", type=int, default=1_000_000)
    ap.add_argument("--kinds", default=",".join(KINDS))
    o = ap.parse_args()
    os.makedirs(o.dir, exist_ok=True)
    print(f"kerchunk references to one dataset of {o.chunks} chunks per index kind "
          f"(files written by h5py {__import__('h5py').__version__}, libhdf5 "
          f"{__import__('h5py').version.hdf5_version}; kerchunk "
          f"{__import__('kerchunk').__version__})")
    print(f"{'index':<9} {'chunks':>9} {'h5chunk s':>10} {'RSS MiB':>8} "
          f"{'kerchunk s':>11} {'RSS MiB':>8} {'speedup':>8}  same ranges")
    ok = True
    for kind in o.kinds.split(","):
        h5 = os.path.join(o.dir, f"{kind}-{o.chunks}.h5")
        if not os.path.exists(h5):
            t = time.perf_counter()
            subprocess.run([sys.executable, "-c", GEN, kind, str(o.chunks), h5], check=True)
            os.replace(h5 + ".tmp", h5)
            print(f"  (wrote {h5} with h5py in {time.perf_counter() - t:.1f} s)", file=sys.stderr)
        ours_json = os.path.join(o.dir, f"{kind}.h5chunk.json")
        theirs_json = os.path.join(o.dir, f"{kind}.kerchunk.json")
        ours_s, ours_rss, _ = run_measured([o.h5chunk, "refs", h5, "-o", ours_json])
        _, theirs_rss, out = run_measured([sys.executable, "-c", KERCHUNK, h5, theirs_json])
        theirs_s = float(out.strip().splitlines()[-1])
        ours, theirs = chunk_ranges(ours_json), chunk_ranges(theirs_json)
        same = ours == theirs
        n = len(ours)
        speedup = theirs_s / ours_s
        print(f"{kind:<9} {n:>9} {ours_s:>10.3f} {ours_rss:>8.0f} {theirs_s:>11.3f} "
              f"{theirs_rss:>8.0f} {speedup:>7.1f}x  {'yes' if same else 'NO'}")
        print(f"RESULT kind=refs index={kind} chunks={n} h5chunk_s={ours_s:.4f} "
              f"h5chunk_rss_mib={ours_rss:.0f} kerchunk_s={theirs_s:.4f} "
              f"kerchunk_rss_mib={theirs_rss:.0f} speedup={speedup:.2f} same={same}")
        if not same:
            only = sorted(set(ours.items()) ^ set(theirs.items()))[:5]
            print(f"  references differ ({len(ours)} vs {len(theirs)} chunks), e.g. {only}")
        ok &= same and speedup >= 10 and n == o.chunks
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
