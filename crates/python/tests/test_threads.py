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


def ran_concurrently(operation, setup=None):
    """Whether another Python thread ran while `operation()` was inside h5chunk, in 50 tries.

    With a switch interval far longer than the test, a thread holding the GIL is never made
    to give it up: the counter thread can tick during `operation()` only if h5chunk released
    the GIL. The counter thread sleeps after each tick (which releases the GIL), so the main
    thread gets it back whenever it wants it."""
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
    t.start()
    try:
        for _ in range(50):
            if setup is not None:
                setup()  # not measured: ticks it lets happen are before `before`
            before = ticks
            operation()
            if ticks != before:
                return True
        return False
    finally:
        stop = True
        t.join()
        sys.setswitchinterval(old)


def test_read_releases_the_gil(tmp_path):
    make(tmp_path / "t.h5")
    with h5chunk.File(tmp_path / "t.h5") as f:
        d = f["d"]
        # Each read decompresses 64 chunks: long enough for the counter to tick.
        assert ran_concurrently(lambda: d[...]), "the read holds the GIL"


def test_write_flush_and_append_release_the_gil(tmp_path):
    data = np.arange(1 << 20, dtype="f8")
    with h5chunk.File(tmp_path / "w.h5", "w") as f:
        d = f.create_dataset("d", shape=data.shape, chunks=(1 << 14,), dtype="f8",
                             compression="gzip", shuffle=True)
        g = f.create_dataset("g", shape=(0,), maxshape=(None,), chunks=(1 << 14,), dtype="f8",
                             compression="gzip")

        def write():
            d[...] = data

        assert ran_concurrently(write), "the write holds the GIL"
        # Each flush compresses the 64 chunks the write before it made dirty.
        assert ran_concurrently(f.flush, setup=write), "the flush holds the GIL"
        assert ran_concurrently(lambda: g.append(data)), "the append holds the GIL"


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
