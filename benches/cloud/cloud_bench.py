"""`cargo xtask bench --cloud`: opening, listing and reading a remote HDF5 file, h5chunk against
h5py over fsspec, through a local S3 (moto) and a local HTTP server, each behind a proxy that
adds a fixed latency to every request and counts them.

    cloud_bench.py run DIR PROBE H5CHUNK [KEY=VALUE ...]

Files (made under DIR, kept between runs when their parameters are unchanged):
- `atl03.h5`: an ICESat-2 ATL03-like granule written by h5py with its defaults (version 0
  superblock, old-style groups, v1 B-tree chunk indexes; each dataset's object header and index
  written just before its chunks, so the metadata is scattered through the file): `beams` beam
  groups of `subgroups` subgroups of `datasets` deflated 1-D datasets of `n` float32 values in
  chunks of `chunk`, three string attributes each, and a few small ancillary datasets;
- `atl03_mf.h5`: `h5chunk repack --paged PAGE --metadata-first` of it (every structure in the
  first page, the raw data in the pages after);
- `atl03_h5repack.h5`: libhdf5's `h5repack -S PAGE -G PAGE` of it (paged, metadata where
  libhdf5 puts it), when h5repack is installed.

Servers: moto's S3 server (`moto_server`) with the files uploaded, and a range-capable HTTP
server over DIR; in front of each, `proxy` (below): every request waits `latency` ms before it
is forwarded (requests in flight at once wait at once: what concurrency buys is seen), and the
proxy counts GETs, HEADs and the bytes of the response bodies.

Sides, one fresh process per (server, latency, file, side), each doing: open; list (every group
and every dataset's shape, type and chunk shape: `h5chunk ls`, and h5py's `visititems`); read
the first chunk of one dataset:
- `h5chunk`: the `cloud_probe` example (`File::open_url`, `Group::prefetch_tree`, the walk of
  `ls`, `read_slice_raw`), its counts from `File::io_stats`, checked against the proxy's;
- `h5chunk-ra`: the same with `H5CHUNK_READ_AHEAD` set to `ra` bytes (8 MiB unless set, the
  page: the opening request fetches a paged file's whole first page; h5chunk's default, 1 MiB,
  already holds the metadata-first copy's 0.7 MB of metadata, so that the rest of its first
  page is never fetched);
- `kerchunk`: kerchunk references made beforehand from the local file (kerchunk's
  `SingleHdf5ToZarr`, its seconds printed as `gen_s`, not counted in the others) and read by
  zarr through fsspec's reference file system: opening is loading the JSON, listing is every
  group and array the references name (the metadata is in them: no request), the chunk is
  read from the server;
- `fsspec-MODE`: h5py on an fsspec file (s3fs for S3, fsspec's HTTP file system over aiohttp
  for HTTP) with `cache_type=MODE` and blocks of `block` bytes: `readahead`, `blockcache`,
  `first`, `mmap` (and `none` with `modes=`), counted by the proxy between phases.

Prints one `RESULT` line per run (`server latency_ms file side` and each phase's cumulative
GETs, HEADs, bytes and seconds), and `FILE` lines (name, size). Exit status 1 on a failed run
or when the sides list a different number of objects or read a different chunk.
"""
import argparse, http.client, json, os, shutil, signal, socket, socketserver, subprocess, sys
import threading
import time, urllib.request

BUCKET = "granules"
SUBGROUPS = ["heights", "geolocation", "geophys_corr", "bckgrd_atlas", "signal_find_output"]
FIELDS = ["h_ph", "lat_ph", "lon_ph", "delta_time", "dist_ph_along", "dist_ph_across",
          "quality_ph", "signal_conf_ph", "pce_mframe_cnt", "ph_id_count"]

MAKE = r"""
import sys, h5py, numpy as np
path, beams, subgroups, datasets, n, chunk = sys.argv[1], *map(int, sys.argv[2:7])
SUB = %r
FIELDS = %r
rng = np.random.default_rng(3)
with h5py.File(path, "w") as f:
    f.attrs["short_name"] = "ATL03"
    anc = f.create_group("ancillary_data")
    for i in range(4):
        anc.create_dataset("param%%d" %% i, data=np.arange(8, dtype="<f8") * i)
    f.create_group("orbit_info").create_dataset("orbit_number", data=np.arange(2, dtype="<u2"))
    for b in range(beams):
        beam = f.create_group("gt%%d%%s" %% (b // 2 + 1, "lr"[b %% 2]))
        beam.attrs["atlas_beam_type"] = "strong" if b %% 2 == 0 else "weak"
        for s in range(subgroups):
            g = beam.create_group(SUB[s %% len(SUB)] if s < len(SUB) else "sub%%d" %% s)
            for d in range(datasets):
                name = FIELDS[d] if d < len(FIELDS) else "field%%d" %% d
                v = rng.normal(size=n).astype("<f4").cumsum()
                ds = g.create_dataset(name, data=v, chunks=(chunk,), compression="gzip")
                ds.attrs["units"] = "meters"
                ds.attrs["long_name"] = "%%s of beam %%d" %% (name, b)
                ds.attrs["description"] = "An ATL03-like photon field, for the cloud benchmark."
""" % (SUBGROUPS, FIELDS)


def make(args, d):
    """The three files (the paged ones from the original), remade when the parameters change."""
    params = [str(args[k]) for k in ("beams", "subgroups", "datasets", "n", "chunk", "page")]
    stamp = os.path.join(d, "params")
    orig = os.path.join(d, "atl03.h5")
    files = {"original": orig, "metadata-first": os.path.join(d, "atl03_mf.h5")}
    if shutil.which("h5repack") and args["h5repack"]:
        files["h5repack-paged"] = os.path.join(d, "atl03_h5repack.h5")
    fresh = os.path.exists(stamp) and open(stamp).read() == " ".join(params) and all(
        os.path.exists(p) for p in files.values())
    if not fresh:
        for p in files.values():
            if os.path.exists(p):
                os.remove(p)
        subprocess.run([sys.executable, "-c", MAKE, orig, *params[:5]], check=True)
        subprocess.run([args["h5chunk"], "repack", "--paged", params[5], "--metadata-first",
                        orig, files["metadata-first"]], check=True)
        if "h5repack-paged" in files:
            subprocess.run(["h5repack", "-S", "PAGE", "-G", params[5], orig,
                            files["h5repack-paged"]], check=True)
        open(stamp, "w").write(" ".join(params))
    return files


# --- the latency-injecting, counting proxy -------------------------------------------------

class Counts:
    def __init__(self):
        self.lock = threading.Lock()
        self.latency = 0.0
        self.reset()

    def reset(self):
        self.since = time.perf_counter()
        self.gets = self.heads = self.others = self.bytes = 0
        self.log = []

    def snapshot(self):
        return {"gets": self.gets, "heads": self.heads, "others": self.others,
                "bytes": self.bytes, "log": list(self.log)}


# Requests forwarded to the origin at once, at most.
UPSTREAM = 64


def proxy(upstream_port, counts):
    """A threaded HTTP/1.1 proxy on a free local port to 127.0.0.1:upstream_port; its port.
    `/__proxy__/stats`, `/__proxy__/reset` and `/__proxy__/latency/MS` are answered by the
    proxy itself (not counted, no latency)."""
    upstream = threading.BoundedSemaphore(UPSTREAM)

    class Handler(socketserver.StreamRequestHandler):
        # TCP_NODELAY, as every HTTP server that matters sets it: with Nagle's algorithm a
        # response written in two pieces waits for the client's delayed ACK of the first
        # (40 ms on Linux), which measured the kernel's timers, not the readers.
        disable_nagle_algorithm = True

        def handle(self):
            try:
                self.serve()
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client went away (its process ended)

        def serve(self):
            up = None
            while True:
                line = self.rfile.readline(65537)
                if not line:
                    break
                if line.strip() == b"":
                    continue
                method, target, _version = line.decode("latin-1").split()
                headers = []
                while True:
                    h = self.rfile.readline(65537)
                    if h.strip() == b"":
                        break
                    k, v = h.decode("latin-1").split(":", 1)
                    headers.append((k.strip(), v.strip()))
                low = {k.lower(): v for k, v in headers}
                length = int(low.get("content-length", "0"))
                body = self.rfile.read(length) if length else None
                close = low.get("connection", "").lower() == "close"
                if target.startswith("/__proxy__/"):
                    self.control(target)
                    if close:
                        break
                    continue
                began = time.perf_counter()
                if counts.latency:
                    time.sleep(counts.latency)
                # At most UPSTREAM requests at the origin at once (moto's listen queue is 128:
                # hundreds of connections at once would have SYNs dropped and retried a second
                # later, which measures TCP's back-off, not the reader).
                upstream.acquire()
                try:
                    for attempt in range(2):
                        try:
                            if up is None:
                                up = http.client.HTTPConnection("127.0.0.1", upstream_port,
                                                                timeout=120)
                            up.putrequest(method, target, skip_host=True,
                                          skip_accept_encoding=True)
                            for k, v in headers:
                                if k.lower() not in ("connection", "keep-alive",
                                                     "proxy-connection"):
                                    up.putheader(k, v)
                            up.endheaders(body)
                            resp = up.getresponse()
                            data = resp.read()
                            break
                        except (http.client.HTTPException, OSError):
                            if up is not None:
                                up.close()
                            up = None
                            if attempt == 1:
                                raise
                finally:
                    upstream.release()
                with counts.lock:
                    if method == "GET":
                        counts.gets += 1
                    elif method == "HEAD":
                        counts.heads += 1
                    else:
                        counts.others += 1
                    counts.bytes += len(data)
                    counts.log.append([round(began - counts.since, 4), method,
                                       low.get("range", "-"), resp.status, len(data)])
                out = ["HTTP/1.1 %d %s\r\n" % (resp.status, resp.reason)]
                for k, v in resp.getheaders():
                    kl = k.lower()
                    if kl in ("transfer-encoding", "connection", "keep-alive"):
                        continue
                    if kl == "content-length" and method != "HEAD":
                        continue
                    out.append("%s: %s\r\n" % (k, v))
                if method != "HEAD":
                    out.append("Content-Length: %d\r\n" % len(data))
                out.append("\r\n")
                # Head and body in one write.
                self.wfile.write("".join(out).encode("latin-1") + (
                    data if method != "HEAD" else b""))
                self.wfile.flush()
                if close:
                    break
            if up is not None:
                up.close()

        def control(self, target):
            what = target[len("/__proxy__/"):]
            with counts.lock:
                if what == "stats":
                    body = json.dumps(counts.snapshot()).encode()
                elif what == "reset":
                    counts.reset()
                    body = b"{}"
                elif what.startswith("latency/"):
                    counts.latency = float(what.split("/")[1]) / 1000.0
                    body = b"{}"
                else:
                    body = b"?"
            self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                             b"Content-Length: %d\r\n\r\n" % len(body) + body)
            self.wfile.flush()

    class Server(socketserver.ThreadingTCPServer):
        daemon_threads = True
        allow_reuse_address = True
        request_queue_size = 1024

    s = Server(("127.0.0.1", 0), Handler)
    threading.Thread(target=s.serve_forever, daemon=True).start()
    return s.server_address[1]


def control(port, what):
    with urllib.request.urlopen("http://127.0.0.1:%d/__proxy__/%s" % (port, what),
                                timeout=30) as r:
        return json.loads(r.read())


# --- the origin servers -------------------------------------------------------------------

RANGE_SERVER = r"""
import os, re, sys, http.server
root, port_file = sys.argv[1], sys.argv[2]
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # No Nagle delay between the head and the body (see the proxy's handler).
    disable_nagle_algorithm = True
    def log_message(self, *a):
        pass
    def answer(self, head_only):
        p = os.path.join(root, os.path.basename(self.path))
        if not os.path.isfile(p):
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        size = os.path.getsize(p)
        m = re.fullmatch(r"bytes=(\d+)-(\d*)", self.headers.get("Range", ""))
        start, end = 0, size - 1
        if m:
            start = int(m.group(1))
            end = min(int(m.group(2)) if m.group(2) else size - 1, size - 1)
            if start >= size:
                self.send_response(416)
                self.send_header("Content-Range", "bytes */%d" % size)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(206)
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, end, size))
        else:
            self.send_response(200)
        self.send_header("Content-Length", str(end - start + 1))
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("Content-Type", "application/octet-stream")
        self.end_headers()
        if not head_only:
            with open(p, "rb") as f:
                f.seek(start)
                self.wfile.write(f.read(end - start + 1))
    def do_GET(self):
        self.answer(False)
    def do_HEAD(self):
        self.answer(True)
class S(http.server.ThreadingHTTPServer):
    request_queue_size = 1024
s = S(("127.0.0.1", 0), H)
with open(port_file + ".tmp", "w") as f:
    f.write(str(s.server_address[1]))
os.replace(port_file + ".tmp", port_file)
s.serve_forever()
"""

# moto's server (`moto_server`), its werkzeug handler without Nagle's delay (see the proxy's
# handler).
MOTO = r"""
import sys
import werkzeug.serving
werkzeug.serving.WSGIRequestHandler.disable_nagle_algorithm = True
from moto.server import main
sys.argv[0] = "moto_server"
sys.exit(main())
"""

UPLOAD = r"""
import os, sys, boto3
endpoint, bucket = sys.argv[1], sys.argv[2]
s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="testing",
                  aws_secret_access_key="testing", region_name="us-east-1")
s3.create_bucket(Bucket=bucket)
for p in sys.argv[3:]:
    s3.upload_file(p, bucket, os.path.basename(p))
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, what, proc):
    t = time.time()
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if proc.poll() is not None or time.time() - t > 60:
                raise SystemExit("%s did not start" % what)
            time.sleep(0.1)


def start_servers(d, files, children):
    """(name, upstream port) of moto's S3 server (files uploaded) and the HTTP server."""
    moto_port = free_port()
    m = subprocess.Popen([sys.executable, "-c", MOTO, "-H", "127.0.0.1", "-p", str(moto_port)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    children.append(m)
    wait_port(moto_port, "moto_server", m)
    subprocess.run([sys.executable, "-c", UPLOAD, "http://127.0.0.1:%d" % moto_port, BUCKET,
                    *files.values()], check=True)
    port_file = os.path.join(d, "http.port")
    if os.path.exists(port_file):
        os.remove(port_file)
    h = subprocess.Popen([sys.executable, "-c", RANGE_SERVER, d, port_file])
    children.append(h)
    t = time.time()
    while not os.path.exists(port_file):
        if h.poll() is not None or time.time() - t > 60:
            raise SystemExit("the HTTP server did not start")
        time.sleep(0.05)
    return [("s3", moto_port), ("http", int(open(port_file).read()))]


# --- the sides ----------------------------------------------------------------------------

# What both Python sides share: the proxy's counts (GETs, HEADs, body bytes so far), and the
# `RESULT` line printed from the phases' seconds and counts and the chunk read.
PROXY_STATS = r"""
def stats():
    with urllib.request.urlopen("http://127.0.0.1:%s/__proxy__/stats" % proxy) as r:
        s = json.loads(r.read())
    return s["gets"], s["heads"], s["bytes"]
"""

RESULT = r"""
b = np.ascontiguousarray(chunk).view(np.uint8)
print("RESULT open_s=%.6f list_s=%.6f read_s=%.6f open_gets=%d open_heads=%d open_bytes=%d "
      "list_gets=%d list_heads=%d list_bytes=%d read_gets=%d read_heads=%d read_bytes=%d "
      "objects=%d chunk_bytes=%d check=%d" % (open_s, list_s, read_s, *o, *l, *r,
      len(objects), b.size, int(b.astype(np.uint64).sum())))
"""


FSSPEC_SIDE = r"""
import json, sys, time, urllib.request
t0 = time.perf_counter()
import fsspec, h5py, numpy as np
server, proxy, name, mode, block, dataset = sys.argv[1:7]
block = int(block)
""" + PROXY_STATS + r"""
t = time.perf_counter()
if server == "s3":
    fs = fsspec.filesystem("s3", key="testing", secret="testing", skip_instance_cache=True,
        client_kwargs={"endpoint_url": "http://127.0.0.1:%s" % proxy, "region_name": "us-east-1"})
    path = "granules/" + name
else:
    fs = fsspec.filesystem("http", skip_instance_cache=True)
    path = "http://127.0.0.1:%s/%s" % (proxy, name)
f = fs.open(path, "rb", cache_type=mode, block_size=block)
h = h5py.File(f, "r")
open_s = time.perf_counter() - t
o = stats()
t = time.perf_counter()
objects = []
def visit(name, obj):
    if isinstance(obj, h5py.Dataset):
        objects.append((name, obj.shape, obj.dtype.str, obj.chunks))
    else:
        objects.append((name,))
h.visititems(visit)
list_s = time.perf_counter() - t
l = stats()
t = time.perf_counter()
d = h[dataset]
c = d.chunks or d.shape
chunk = d[tuple(slice(0, min(a, b)) for a, b in zip(c, d.shape))]
read_s = time.perf_counter() - t
r = stats()
""" + RESULT


KERCHUNK_GEN = r"""
import json, sys, time
from kerchunk.hdf import SingleHdf5ToZarr
path, out = sys.argv[1:3]
t = time.perf_counter()
with open(path, "rb") as f:
    refs = SingleHdf5ToZarr(f, "URL", inline_threshold=0).translate()
gen_s = time.perf_counter() - t
with open(out, "w") as f:
    json.dump(refs, f)
print("GEN %.6f" % gen_s)
"""

KERCHUNK_SIDE = r"""
import json, os, sys, tempfile, time, urllib.request
import fsspec, zarr, numpy as np
server, proxy, name, template, dataset = sys.argv[1:6]
""" + PROXY_STATS + r"""
t = time.perf_counter()
if server == "s3":
    url, protocol = "s3://granules/" + name, "s3"
    options = {"key": "testing", "secret": "testing", "asynchronous": True, "client_kwargs": {
        "endpoint_url": "http://127.0.0.1:%s" % proxy, "region_name": "us-east-1"}}
else:
    url, protocol = "http://127.0.0.1:%s/%s" % (proxy, name), "http"
    options = {"asynchronous": True}
with open(template) as f:
    refs = json.loads(f.read().replace('"URL"', json.dumps(url)))
g = zarr.open_group("reference://", mode="r", zarr_format=2, storage_options={
    "fo": refs, "remote_protocol": protocol, "remote_options": options})
open_s = time.perf_counter() - t
o = stats()
t = time.perf_counter()
objects = []
for k in sorted(refs["refs"]):
    if k.endswith("/.zgroup"):
        objects.append((k[:-len("/.zgroup")],))
    elif k.endswith("/.zarray"):
        a = g[k[:-len("/.zarray")]]
        objects.append((k, a.shape, a.dtype.str, a.chunks))
list_s = time.perf_counter() - t
l = stats()
t = time.perf_counter()
d = g[dataset]
chunk = d[tuple(slice(0, min(a, b)) for a, b in zip(d.chunks, d.shape))]
read_s = time.perf_counter() - t
r = stats()
""" + RESULT


def make_refs(files):
    """kerchunk's references to each file (the URL a placeholder), made from the local file:
    {kind: (path of the JSON, seconds to make it)}."""
    out = {}
    for kind, path in files.items():
        refs = path + ".refs.json"
        p = subprocess.run([sys.executable, "-c", KERCHUNK_GEN, path, refs], check=True,
                           stdout=subprocess.PIPE, text=True)
        gen_s = float(p.stdout.split()[-1])
        out[kind] = (refs, gen_s)
        print("REFS kind=%s gen_s=%.6f" % (kind, gen_s))
    return out


def parse_result(stdout):
    for line in stdout.splitlines():
        if line.startswith("RESULT "):
            return dict(kv.split("=", 1) for kv in line.split()[1:])
    return None


def run_side(args, server, port, name, side, dataset, refs=None):
    env = dict(os.environ)
    for k in ("H5CHUNK_READ_AHEAD", "H5CHUNK_BLOCK_SIZE", "H5CHUNK_COALESCE_GAP"):
        env.pop(k, None)
    if side == "h5chunk-ra":
        env["H5CHUNK_READ_AHEAD"] = str(args["ra"])
    if side.startswith("h5chunk"):
        if server == "s3":
            url = "s3://%s/%s" % (BUCKET, name)
            env.update(AWS_ENDPOINT_URL="http://127.0.0.1:%d" % port, AWS_ALLOW_HTTP="true",
                       AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing",
                       AWS_REGION="us-east-1")
        else:
            url = "http://127.0.0.1:%d/%s" % (port, name)
        cmd = [args["probe"], url, dataset]
    elif side == "kerchunk":
        cmd = [sys.executable, "-c", KERCHUNK_SIDE, server, str(port), name, refs, dataset]
    else:
        mode = side.split("-", 1)[1]
        cmd = [sys.executable, "-c", FSSPEC_SIDE, server, str(port), name, mode,
               str(args["block"]), dataset]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                       timeout=1800)
    r = parse_result(p.stdout)
    if p.returncode != 0 or r is None:
        last = (p.stderr.strip().splitlines() or ["(nothing on stderr)"])[-1]
        return None, "exited %d: %s" % (p.returncode, last)
    return r, None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cmd", choices=["run"])
    ap.add_argument("dir")
    ap.add_argument("probe")
    ap.add_argument("h5chunk")
    ap.add_argument("params", nargs="*")
    a = ap.parse_args()
    args = {"beams": 6, "subgroups": 5, "datasets": 8, "n": 40000, "chunk": 10000,
            "page": 8 << 20, "ra": 8 << 20, "block": 1 << 20, "latencies": "20,80",
            "modes": "readahead,blockcache,first,mmap", "servers": "s3,http",
            "h5repack": 1, "kerchunk": 1, "log": 0}
    for kv in a.params:
        k, v = kv.split("=", 1)
        if k not in args:
            raise SystemExit("unknown parameter %s" % k)
        args[k] = v if isinstance(args[k], str) else int(v)
    args["probe"], args["h5chunk"] = a.probe, a.h5chunk
    os.makedirs(a.dir, exist_ok=True)
    files = make(args, a.dir)
    for kind, p in files.items():
        print("FILE kind=%s name=%s bytes=%d" % (kind, os.path.basename(p), os.path.getsize(p)))
    refs = make_refs(files) if args["kerchunk"] else {}
    sys.stdout.flush()
    # The last beam's first dataset: far from the file's start (the first dataset's chunks
    # would come with the opening request's read-ahead).
    last = args["beams"] - 1
    dataset = "gt%d%s/heights/%s" % (last // 2 + 1, "lr"[last % 2], FIELDS[0])
    # Stopped (SIGTERM): the servers are stopped too.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    children = []
    failures = 0
    try:
        servers = start_servers(a.dir, files, children)
        wanted = args["servers"].split(",")
        sides = ["h5chunk", "h5chunk-ra"] + (["kerchunk"] if refs else []) + [
            "fsspec-" + m for m in args["modes"].split(",") if m]
        agree = {}
        for server, upstream in servers:
            if server not in wanted:
                continue
            counts = Counts()
            port = proxy(upstream, counts)
            for latency in [int(x) for x in args["latencies"].split(",")]:
                control(port, "latency/%d" % latency)
                for kind, path in files.items():
                    name = os.path.basename(path)
                    for side in sides:
                        control(port, "reset")
                        r, why = run_side(args, server, port, name, side, dataset,
                                          refs.get(kind, (None,))[0])
                        seen = control(port, "stats")
                        head = "server=%s latency_ms=%d file=%s side=%s" % (
                            server, latency, kind, side)
                        if r is None:
                            print("RESULT %s failed=%s" % (head, why.replace(" ", "_")))
                            failures += 1
                            continue
                        # The side's own counts must be the proxy's (h5chunk's io_stats).
                        total = (seen["gets"], seen["heads"], seen["bytes"])
                        own = (int(r["read_gets"]), int(r["read_heads"]), int(r["read_bytes"]))
                        if total != own:
                            print("MISMATCH %s proxy=%s side=%s" % (head, total, own))
                            failures += 1
                        key = (r["objects"], r["chunk_bytes"], r["check"])
                        agree.setdefault(kind, {})[side] = key
                        if side == "kerchunk":
                            r["gen_s"] = "%.6f" % refs[kind][1]
                        print("RESULT %s %s proxy_gets=%d proxy_heads=%d proxy_bytes=%d" % (
                            head, " ".join("%s=%s" % kv for kv in r.items()), *total))
                        if args["log"]:
                            for entry in seen["log"]:
                                print("LOG %s %s" % (head, " ".join(map(str, entry))))
                        sys.stdout.flush()
        for kind, by_side in agree.items():
            if len(set(by_side.values())) > 1:
                print("DISAGREE file=%s %s" % (kind, by_side))
                failures += 1
    finally:
        for c in children:
            c.kill()
            c.wait()
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
