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

Then (`--dask-gib G`, default 2; 0 skips it) a G GiB float32 file (32 MiB chunks) written by
h5py is put in a local S3 server (moto's, started here); both tools make references to it
through S3, and a dask.distributed LocalCluster (2 worker processes) reads the whole array
through each reference set (fsspec's reference file system over s3fs, zarr): the time, and
the sum and a strided sample checked against h5py's local read. moto reads a whole object to
answer each ranged GET (seconds for a 2 GiB object), so the chunks are large: 64 GETs a pass.
"""
import argparse, json, os, shutil, socket, subprocess, sys, time

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


DASK_GEN = r"""
import sys, h5py, numpy as np
path, rows, cols, block = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), 1024
with h5py.File(path, "w", libver="latest") as f:
    d = f.create_dataset("data", shape=(rows, cols), dtype="<f4", chunks=(1024, 8192))
    j = np.arange(cols, dtype=np.int64)
    for r in range(0, rows, block):
        i = np.arange(r, min(r + block, rows), dtype=np.int64)[:, None]
        d[r : r + block] = ((i * 7 + j * 3) % 1000).astype("<f4")
"""

KERCHUNK_S3 = r"""
import sys, time, ujson
from kerchunk.hdf import SingleHdf5ToZarr
url, endpoint, out = sys.argv[1:4]
so = {"key": "testing", "secret": "testing",
      "client_kwargs": {"endpoint_url": endpoint, "region_name": "us-east-1"}}
t = time.perf_counter()
refs = SingleHdf5ToZarr(url, storage_options=so, inline_threshold=0).translate()
open(out, "w").write(ujson.dumps(refs))
print(time.perf_counter() - t)
"""

DASK_READ = r"""
import sys, time
import numpy as np, h5py, fsspec, zarr, dask.array as da
from dask.distributed import Client, LocalCluster

def main():
    endpoint, local, sets = sys.argv[1], sys.argv[2], sys.argv[3:]
    so = {"key": "testing", "secret": "testing", "asynchronous": True,
          "client_kwargs": {"endpoint_url": endpoint, "region_name": "us-east-1"}}
    with h5py.File(local, "r") as h:
        d = h["data"]
        want_sample = d[::4099, ::4099]
        want_sum = sum(float(d[r : r + 1024].astype("f8").sum()) for r in range(0, d.shape[0], 1024))
    cluster = LocalCluster(n_workers=2, threads_per_worker=2, processes=True,
                           dashboard_address=None)
    client = Client(cluster)
    for refs in sets:
        z = zarr.open_array("reference://data", mode="r", zarr_format=2, storage_options={
            "fo": refs, "remote_protocol": "s3", "remote_options": so})
        a = da.from_zarr(z)
        t = time.perf_counter()
        total = float(a.astype("f8").sum().compute())
        seconds = time.perf_counter() - t
        sample = a[::4099, ::4099].compute()
        ok = total == want_sum and np.array_equal(sample, want_sample)
        print(refs, seconds, total, want_sum, ok, len(client.scheduler_info()["workers"]))
    client.close()
    cluster.close()

if __name__ == "__main__":
    main()
"""


def wait_for_port(port):
    deadline = time.time() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if time.time() > deadline:
                raise SystemExit("moto_server did not start")
            time.sleep(0.1)


def dask_over_s3(o, python):
    """The dask read through each reference set; True when both read the right values."""
    cols = 32768
    rows = int(o.dask_gib * (1 << 30) / 4 / cols) // 1024 * 1024
    big = os.path.join(o.dir, f"dask-{rows}x{cols}-c1024x8192.h5")
    if not os.path.exists(big):
        t = time.perf_counter()
        subprocess.run([python, "-c", DASK_GEN, big + ".tmp", str(rows), str(cols)], check=True)
        os.replace(big + ".tmp", big)
        print(f"  (wrote {big} with h5py in {time.perf_counter() - t:.1f} s)", file=sys.stderr)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    endpoint = f"http://127.0.0.1:{port}"
    server = subprocess.Popen([os.path.join(os.path.dirname(python), "moto_server"), "-H",
                               "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port)
        import boto3
        s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="testing",
                          aws_secret_access_key="testing", region_name="us-east-1")
        s3.create_bucket(Bucket="bench")
        t = time.perf_counter()
        s3.upload_file(big, "bench", "big.h5")
        print(f"  (uploaded {os.path.getsize(big) / (1 << 30):.2f} GiB to moto in "
              f"{time.perf_counter() - t:.1f} s)", file=sys.stderr)
        url = "s3://bench/big.h5"
        env = dict(os.environ, AWS_ENDPOINT_URL=endpoint, AWS_ALLOW_HTTP="true",
                   AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing",
                   AWS_REGION="us-east-1")
        ours = os.path.join(o.dir, "dask.h5chunk.json")
        theirs = os.path.join(o.dir, "dask.kerchunk.json")
        t = time.perf_counter()
        subprocess.run([o.h5chunk, "refs", url, "-o", ours], check=True, env=env)
        ours_s = time.perf_counter() - t
        p = subprocess.run([python, "-c", KERCHUNK_S3, url, endpoint, theirs], check=True,
                           capture_output=True, text=True)
        theirs_s = float(p.stdout.strip().splitlines()[-1])
        same = chunk_ranges(ours) == chunk_ranges(theirs)
        p = subprocess.run([python, "-c", DASK_READ, endpoint, big, ours, theirs],
                           capture_output=True, text=True)
        if p.returncode != 0:
            raise SystemExit(f"dask read failed: {p.stderr[-3000:]}")
        lines = [l.split() for l in p.stdout.strip().splitlines()[-2:]]
        size = os.path.getsize(big) / (1 << 30)
        print()
        print(f"dask.distributed LocalCluster (2 worker processes, 2 threads each) reading a "
              f"{size:.2f} GiB float32 file ({rows} x {cols}, 32 MiB chunks) from a local S3 "
              f"server (moto) through each reference set")
        print(f"{'references':<10} {'made from S3 s':>15} {'dask read s':>12} {'GiB/s':>7}  values")
        ok = same
        for name, made, (_, secs, total, _want, good, workers) in zip(
                ["h5chunk", "kerchunk"], [ours_s, theirs_s], lines):
            secs = float(secs)
            print(f"{name:<10} {made:>15.3f} {secs:>12.2f} {size / secs:>7.2f}  "
                  f"{'equal to h5py' if good == 'True' else 'WRONG'} (sum {total}, "
                  f"{workers} workers)")
            print(f"RESULT kind=refs_dask refs={name} gib={size:.2f} made_s={made:.4f} "
                  f"read_s={secs:.3f} ok={good} workers={workers}")
            ok &= good == "True" and int(workers) >= 2
        print(f"both reference sets name the same byte ranges: {'yes' if same else 'NO'}")
        return ok
    finally:
        server.kill()
        server.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--h5chunk", required=True)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--chunks", type=int, default=1_000_000)
    ap.add_argument("--kinds", default=",".join(KINDS))
    ap.add_argument("--dask-gib", type=float, default=2.0)
    o = ap.parse_args()
    os.makedirs(o.dir, exist_ok=True)
    print(f"kerchunk references to one dataset of {o.chunks} chunks per index kind "
          f"(files written by h5py {__import__('h5py').__version__}, libhdf5 "
          f"{__import__('h5py').version.hdf5_version}; kerchunk "
          f"{__import__('kerchunk').__version__})")
    print(f"{'index':<9} {'chunks':>9} {'h5chunk s':>10} {'RSS MiB':>8} "
          f"{'kerchunk s':>11} {'RSS MiB':>8} {'speedup':>8}  same ranges  "
          f"{'h5chunk parquet s':>17} {'RSS MiB':>8}")
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
        # The same references in kerchunk's Parquet layout (h5chunk only: kerchunk makes it
        # from its JSON).
        ours_parq = os.path.join(o.dir, f"{kind}.h5chunk.parq")
        shutil.rmtree(ours_parq, ignore_errors=True)
        parq_s, parq_rss, _ = run_measured([o.h5chunk, "refs", h5, "--parquet", ours_parq])
        _, theirs_rss, out = run_measured([sys.executable, "-c", KERCHUNK, h5, theirs_json])
        theirs_s = float(out.strip().splitlines()[-1])
        ours, theirs = chunk_ranges(ours_json), chunk_ranges(theirs_json)
        same = ours == theirs
        n = len(ours)
        speedup = theirs_s / ours_s
        print(f"{kind:<9} {n:>9} {ours_s:>10.3f} {ours_rss:>8.0f} {theirs_s:>11.3f} "
              f"{theirs_rss:>8.0f} {speedup:>7.1f}x  {'yes' if same else 'NO':<11}  "
              f"{parq_s:>17.3f} {parq_rss:>8.0f}")
        print(f"RESULT kind=refs index={kind} chunks={n} h5chunk_s={ours_s:.4f} "
              f"h5chunk_rss_mib={ours_rss:.0f} kerchunk_s={theirs_s:.4f} "
              f"kerchunk_rss_mib={theirs_rss:.0f} speedup={speedup:.2f} same={same} "
              f"h5chunk_parquet_s={parq_s:.4f} h5chunk_parquet_rss_mib={parq_rss:.0f}")
        if not same:
            only = sorted(set(ours.items()) ^ set(theirs.items()))[:5]
            print(f"  references differ ({len(ours)} vs {len(theirs)} chunks), e.g. {only}")
        ok &= same and speedup >= 10 and n == o.chunks
    sys.stdout.flush()
    if o.dask_gib > 0:
        ok &= dask_over_s3(o, sys.executable)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
