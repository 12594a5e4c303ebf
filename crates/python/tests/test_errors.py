"""The exceptions h5py raises for the same mistakes."""

import numpy as np
import pytest

import h5chunk
import h5py


def test_open_modes(tmp_path):
    path = tmp_path / "m.h5"
    with pytest.raises(FileNotFoundError):
        h5chunk.File(path, "r")
    with pytest.raises(FileNotFoundError):
        h5chunk.File(path, "r+")
    with h5chunk.File(path, "x") as f:
        f.create_dataset("d", data=[1, 2])
    with pytest.raises(FileExistsError):
        h5chunk.File(path, "x")
    with pytest.raises(FileExistsError):
        h5chunk.File(path, "w-")
    with pytest.raises(ValueError):
        h5chunk.File(path, "q")
    with h5chunk.File(path, "a") as f:
        assert "d" in f
    with h5chunk.File(path, "w") as f:
        assert len(f) == 0
    with h5chunk.File(path, "r", driver="sec2", rdcc_nbytes=1 << 20, locking=False) as f:
        assert "d" not in f  # h5py's arguments taken, the file as written
    with pytest.raises(h5chunk.UnsupportedError):
        h5chunk.File(path, "r", driver="core")
    f = h5chunk.File(path, "r")
    assert f
    f.close()
    assert not f
    f.close()  # a second close does nothing, as in h5py


def test_missing_and_existing_names(tmp_path):
    path = tmp_path / "n.h5"
    with h5chunk.File(path, "w") as f:
        f.create_dataset("d", data=np.arange(10))
        with pytest.raises(KeyError):
            f["nope"]
        with pytest.raises(KeyError):
            f["d"].attrs["nope"]
        with pytest.raises(ValueError):
            f.create_group("d")
        with pytest.raises(ValueError):
            f.create_dataset("d", data=[1])
        with pytest.raises(TypeError):
            f.create_dataset("e")
        with pytest.raises(ValueError):
            f.create_dataset("e", data=[1, 2], shape=(3,))
        with pytest.raises(ValueError):
            f.create_dataset("e", shape=(4,), compression="nope")
        with pytest.raises(ValueError):
            f.create_dataset("e", shape=(4,), maxshape=(2,))
        with pytest.raises(h5chunk.UnsupportedError):
            f.create_dataset("e", shape=())
        with pytest.raises(NotImplementedError):
            f.create_dataset("e", data=np.array([np.datetime64("2026-01-01")]))


def test_bad_selections(tmp_path):
    path = tmp_path / "s.h5"
    with h5chunk.File(path, "w") as f:
        d = f.create_dataset("d", data=np.arange(12).reshape(3, 4))
        with pytest.raises(ValueError):
            d[::-1]
        with pytest.raises(IndexError):
            d[3]
        with pytest.raises(IndexError):
            d[0, -5]
        with pytest.raises(ValueError):
            d[0, 0, 0]
        with pytest.raises(ValueError):
            d["x"]  # h5py: field names only for compound types
        with pytest.raises(TypeError):
            d[None]
        with pytest.raises(TypeError):
            d[[2, 1]]  # h5py: increasing order only
        with pytest.raises(TypeError):
            d[[0, 1], [0, 1]]  # h5py: one list per selection
        with pytest.raises(IndexError):
            d[[0, 7]]
        with pytest.raises(ValueError):
            d.resize((5, 4))  # maxshape is the shape


def test_len_of_scalar_dataset(tmp_path):
    path = tmp_path / "scalar.h5"
    with h5py.File(path, "w") as f:
        f["s"] = 3.5
    with h5chunk.File(path) as f:
        with pytest.raises(TypeError):
            len(f["s"])
        with pytest.raises(TypeError):
            f["s"].len()


def test_read_only_file_refuses_writes(tmp_path):
    path = tmp_path / "ro.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("d", data=np.arange(4), chunks=(2,))
    with h5chunk.File(path, "r") as f:
        with pytest.raises(OSError):
            f["d"][0] = 5
        with pytest.raises(OSError):
            f.create_group("g")
        with pytest.raises(OSError):
            f.attrs["a"] = 1


BAD_CREATE_ARGS = [
    dict(shape=(5,), chunks=(10,)),
    dict(shape=(5,), chunks=(0,)),
    dict(shape=(5, 2), chunks=(2,)),
    dict(shape=(5,), maxshape=(None,), chunks=False),
    dict(shape=(5,), compression="gzip", compression_opts=12),
    dict(shape=(5,), compression="nope"),
    dict(shape=(5,), maxshape=(4,)),
    dict(shape=(5,), maxshape=(None, 2)),
    dict(data=[1, 2], shape=(3,)),
    dict(shape=(5,), compression=3, compression_opts=4),
]


@pytest.mark.parametrize("kwargs", BAD_CREATE_ARGS, ids=repr)
def test_create_dataset_refuses_as_h5py(tmp_path, kwargs):
    """h5py is the oracle: the same arguments raise the same exception class."""
    with h5py.File(tmp_path / "a.h5", "w") as f:
        with pytest.raises(Exception) as want:
            f.create_dataset("d", dtype="f4", **kwargs)
    with h5chunk.File(tmp_path / "b.h5", "w") as f:
        with pytest.raises(want.type):
            f.create_dataset("d", dtype="f4", **kwargs)


def test_not_an_hdf5_file(tmp_path):
    path = tmp_path / "junk.h5"
    path.write_bytes(b"not hdf5" * 100)
    with pytest.raises(OSError):
        h5py.File(path)
    with pytest.raises(OSError):
        h5chunk.File(path)
