"""Reads release the GIL: another Python thread runs while a read is inside h5chunk, so threads
read in parallel; and reads from many threads at once give the right values."""

import sys
import threading
import time

import numpy as np

import h5chunk


def make(path, n=1 << 20):
    with h5chunk.File(path, "w") as f:
        f.create_dataset("d", data=np.arange(n, dtype="f8"), chunks=(1 << 14,),
                         compression="gzip", shuffle=True)
    return np.arange(n, dtype="f8")


def test_read_releases_the_gil(tmp_path):
    """With a switch interval far longer than the test, a thread holding the GIL is never made
    to give it up: the counter thread can run during `d[...]` only if the read releases the
    GIL. The counter thread sleeps after each tick (which releases the GIL), so the main thread
    gets it back whenever it wants it."""
    make(tmp_path / "t.h5")
    ticks = 0
    stop = False

    def count():
        nonlocal ticks
        while not stop:
            ticks += 1
            time.sleep(1e-4)

    old = sys.getswitchinterval()
    sys.setswitchinterval(1000.0)
    t = threading.Thread(target=count)
    try:
        with h5chunk.File(tmp_path / "t.h5") as f:
            d = f["d"]
            t.start()
            advanced = False
            for _ in range(50):
                before = ticks
                d[...]  # decompresses 64 chunks: long enough for the counter to tick
                if ticks != before:
                    advanced = True
                    break
    finally:
        stop = True
        t.join()
        sys.setswitchinterval(old)
    assert advanced, "no other thread ran during 50 reads: the read holds the GIL"


def test_threads_read_one_dataset(tmp_path):
    want = make(tmp_path / "p.h5", n=1 << 18)
    errors = []
    with h5chunk.File(tmp_path / "p.h5") as f:
        d = f["d"]

        def reader(seed):
            rng = np.random.default_rng(seed)
            try:
                for _ in range(40):
                    a = int(rng.integers(0, want.size - 1000))
                    n = int(rng.integers(1, 1000))
                    np.testing.assert_array_equal(d[a:a + n], want[a:a + n])
                np.testing.assert_array_equal(d[...], want)
            except Exception as e:  # noqa: BLE001 - reported in the main thread
                errors.append(e)

        threads = [threading.Thread(target=reader, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not errors, errors
