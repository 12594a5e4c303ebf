"""The reference side of `cargo xtask bench --filters`: libhdf5's filters through h5py and
hdf5plugin (the C filters users have), one thread (libhdf5's global lock serialises filters).

    filters_bench.py make DIR MIB
        Writes, for each data kind (a detector-like u16 image stack, a float32 climate-like
        field; about MIB MiB each, one 2 MiB frame per chunk) and each filter, DIR/<kind>_<filter>.h5
        with h5py (timed: the reference compression), then reads each back whole (timed, best
        of 2: the reference decompression). Prints one line per file:
        ROW kind=K filter=F file=PATH bytes=N write_s=S read_s=S checksum=C stored=N
        (checksum: the wrapping sum of the values' little-endian bytes as u64 words).
    filters_bench.py direct DIR COUNT
        Writes DIR/frames_ref.h5: u32 frames of 1024 x 1024 (4 MiB) with bitshuffle/LZ4, one
        frame per chunk (the source of pre-compressed frames), then times COUNT
        `write_direct_chunk` calls of those frames (cycling) into a new file, creation to
        close. Prints: DIRECT file=PATH frames=COUNT write_s=S stored_bytes=N
    filters_bench.py read FILE
        One more timed read of FILE's dataset, best of 2 as `make` times it.
        Prints: READ read_s=S checksum=C
    filters_bench.py write SRC DST FILTER
        One more timed write (creation to close) of SRC's values and chunk shape with FILTER
        into DST, removed after. Prints: WRITE filter=F write_s=S bytes=N
"""
import os
import sys
import time

import h5py
import hdf5plugin
import numpy as np

FILTERS = {
    'deflate': dict(compression='gzip', compression_opts=4),
    'shuffle-deflate': dict(shuffle=True, compression='gzip', compression_opts=4),
    'bitshuffle-lz4': dict(hdf5plugin.Bitshuffle(nelems=0, cname='lz4')),
    'lz4': dict(hdf5plugin.LZ4(nbytes=0)),
    'zstd': dict(hdf5plugin.Zstd(clevel=3)),
    'blosc': dict(hdf5plugin.Blosc(cname='lz4', clevel=5, shuffle=hdf5plugin.Blosc.SHUFFLE)),
    'blosc2': dict(hdf5plugin.Blosc2(cname='lz4', clevel=5, filters=hdf5plugin.Blosc2.SHUFFLE)),
    'bzip2': dict(hdf5plugin.BZip2(blocksize=9)),
    'szip': dict(compression='szip', compression_opts=('nn', 16)),
}


def checksum(a):
    b = np.ascontiguousarray(a).view(np.uint8).reshape(-1)
    b = b[: len(b) - len(b) % 8]
    return int(np.add.reduce(b.view('<u8'), dtype=np.uint64))


def data(kind, mib, rng):
    if kind == 'detector':
        # Photon counts: mostly 0-2, a few bright spots, a dead-pixel mask of zeros.
        frames = max(2, mib // 2)
        a = rng.poisson(0.4, (frames, 1024, 1024)).astype('<u2')
        for _ in range(40):
            y, x = rng.integers(8, 1016, 2)
            a[:, y - 3:y + 4, x - 3:x + 4] += rng.integers(50, 5000, dtype='u2')
        a[:, 510:514, :] = 0
        return a, (1, 1024, 1024)
    # A smooth field with small noise, as model output.
    frames = max(2, mib // 2)
    y = np.linspace(-np.pi / 2, np.pi / 2, 512)[:, None]
    x = np.linspace(0, 2 * np.pi, 1024)[None, :]
    base = (288 + 30 * np.cos(y) + 5 * np.sin(3 * x) * np.cos(2 * y)).astype('<f4')
    a = np.empty((frames, 512, 1024), '<f4')
    for t in range(frames):
        a[t] = base + np.float32(0.5 * np.sin(t / 5)) + rng.normal(0, 0.05, base.shape).astype('<f4')
    return a, (1, 512, 1024)


def make(out, mib):
    rng = np.random.default_rng(1)
    for kind in ['detector', 'climate']:
        a, chunks = data(kind, mib, rng)
        for name, opts in FILTERS.items():
            path = os.path.join(out, '%s_%s.h5' % (kind, name))
            t0 = time.perf_counter()
            with h5py.File(path, 'w') as f:
                f.create_dataset('data', data=a, chunks=chunks, **opts)
            write_s = time.perf_counter() - t0
            best, b = read_best(path)
            if not np.array_equal(a, b):
                sys.exit('%s: h5py reads back different values' % path)
            print('ROW kind=%s filter=%s file=%s bytes=%d write_s=%.6f read_s=%.6f checksum=%d stored=%d'
                  % (kind, name, path, a.nbytes, write_s, best, checksum(b), os.path.getsize(path)),
                  flush=True)


def read_best(path):
    # Best of two whole reads in this process (the first also warms the page cache), as
    # h5chunk-filters' `read` times its side.
    best = None
    for _ in range(2):
        t0 = time.perf_counter()
        with h5py.File(path, 'r') as f:
            b = f['data'][()]
        s = time.perf_counter() - t0
        best = s if best is None else min(best, s)
    return best, b


def write(src, dst, name):
    # One timed write of SRC's values with filter NAME, creation to close, as `make` times
    # it: the bench alternates these with h5chunk's writes of the same values.
    with h5py.File(src, 'r') as f:
        a = f['data'][()]
        chunks = f['data'].chunks
    t0 = time.perf_counter()
    with h5py.File(dst, 'w') as f:
        f.create_dataset('data', data=a, chunks=chunks, **FILTERS[name])
    write_s = time.perf_counter() - t0
    os.remove(dst)
    print('WRITE filter=%s write_s=%.6f bytes=%d' % (name, write_s, a.nbytes), flush=True)


def direct(out, count):
    rng = np.random.default_rng(2)
    src = os.path.join(out, 'frames_ref.h5')
    frames = 4
    a = rng.poisson(0.4, (frames, 1024, 1024)).astype('<u4')
    with h5py.File(src, 'w') as f:
        f.create_dataset('data', data=a, chunks=(1, 1024, 1024), **hdf5plugin.Bitshuffle(nelems=0, cname='lz4'))
    with h5py.File(src, 'r') as f:
        stored = [f['data'].id.read_direct_chunk((i, 0, 0)) for i in range(frames)]
    dst = os.path.join(out, 'frames_direct_ref.h5')
    t0 = time.perf_counter()
    with h5py.File(dst, 'w') as f:
        d = f.create_dataset('data', shape=(count, 1024, 1024), dtype='<u4', chunks=(1, 1024, 1024),
                             **hdf5plugin.Bitshuffle(nelems=0, cname='lz4'))
        n = 0
        for i in range(count):
            mask, frame = stored[i % frames]
            d.id.write_direct_chunk((i, 0, 0), frame, mask)
            n += len(frame)
    write_s = time.perf_counter() - t0
    os.remove(dst)
    print('DIRECT file=%s frames=%d write_s=%.6f stored_bytes=%d' % (src, count, write_s, n), flush=True)


if __name__ == '__main__':
    if sys.argv[1] == 'write':
        write(sys.argv[2], sys.argv[3], sys.argv[4])
        sys.exit(0)
    if sys.argv[1] == 'read':
        read_s, b = read_best(sys.argv[2])
        print('READ read_s=%.6f checksum=%d' % (read_s, checksum(b)), flush=True)
        sys.exit(0)
    mode, out, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    os.makedirs(out, exist_ok=True)
    if mode == 'make':
        make(out, n)
    elif mode == 'direct':
        direct(out, n)
    else:
        sys.exit('usage: filters_bench.py make DIR MIB | direct DIR COUNT | read FILE | write SRC DST FILTER')
