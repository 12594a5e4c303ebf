"""SWMR across processes: a writer appends and flushes while a reader in another process
refreshes and checks every value it sees; h5chunk and h5py take each side."""

import subprocess
import sys
import textwrap

import numpy as np

import h5chunk
import h5py

READER = textwrap.dedent(
    """
    import sys, numpy as np
    import {lib} as lib
    f = lib.File(sys.argv[1], "r", swmr=True)
    d = f["x"]
    for line in sys.stdin:
        d.refresh()
        v = d[...]
        ok = np.array_equal(v, np.arange(v.shape[0], dtype="f8"))
        print(v.shape[0], ok, flush=True)
    f.close()
    """
)

WRITER = textwrap.dedent(
    """
    import sys, numpy as np
    import {lib} as lib
    f = lib.File(sys.argv[1], "w", libver="latest")
    d = f.create_dataset("x", shape=(0,), maxshape=(None,), chunks=(16,), dtype="f8")
    f.swmr_mode = True
    n = 0
    for line in sys.stdin:
        k = int(line)
        if hasattr(d, "append"):
            d.append(np.arange(n, n + k, dtype="f8"))
        else:
            d.resize((n + k,))
            d[n:] = np.arange(n, n + k, dtype="f8")
        n += k
        f.flush()
        print(n, flush=True)
    f.close()
    """
)


def spawn(script, lib, path):
    return subprocess.Popen(
        [sys.executable, "-c", script.format(lib=lib), str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def ask(proc, line):
    proc.stdin.write(line + "\n")
    proc.stdin.flush()
    answer = proc.stdout.readline()
    assert answer, "the other process ended"
    return answer.split()


def test_h5chunk_writer_h5py_reader_process(tmp_path):
    path = tmp_path / "w.h5"
    f = h5chunk.File(path, "w", libver="latest")
    d = f.create_dataset("x", shape=(0,), maxshape=(None,), chunks=(16,), dtype="f8")
    f.swmr_mode = True
    f.flush()
    reader = spawn(READER, "h5py", path)
    try:
        n = 0
        for k in [1, 15, 16, 40, 3, 100]:
            d.append(np.arange(n, n + k, dtype="f8"))
            n += k
            f.flush()
            seen, ok = ask(reader, "next")
            assert (int(seen), ok) == (n, "True")
    finally:
        reader.stdin.close()
        assert reader.wait(timeout=60) == 0
        f.close()


def test_h5py_writer_h5chunk_reader_process(tmp_path):
    path = tmp_path / "r.h5"
    writer = spawn(WRITER, "h5py", path)
    try:
        assert ask(writer, "5") == ["5"]
        with h5chunk.File(path, "r", swmr=True) as f:
            d = f["x"]
            n = 5
            for k in [11, 16, 33, 1]:
                assert ask(writer, str(k)) == [str(n + k)]
                n += k
                d.refresh()
                assert d.shape == (n,)
                np.testing.assert_array_equal(d[...], np.arange(n, dtype="f8"))
    finally:
        writer.stdin.close()
        assert writer.wait(timeout=60) == 0
    with h5py.File(path) as f:
        assert f["x"].shape == (66,)
