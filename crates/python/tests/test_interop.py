"""h5chunk's Python module against h5py: files each writes read equal in the other, and the
same selections give the same arrays (numpy's, as h5py gives them)."""

import numpy as np
import pytest

import h5chunk
import h5py

NUMBER_DTYPES = ["i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f2", "f4", "f8", "?"]


def sample(dtype, shape):
    n = int(np.prod(shape))
    if np.dtype(dtype).kind == "b":
        return (np.arange(n) % 3 == 0).reshape(shape)
    if np.dtype(dtype).kind == "f":
        return (np.arange(n) * 0.5 - 7).astype(dtype).reshape(shape)
    return (np.arange(n) % 100).astype(dtype).reshape(shape)


@pytest.mark.parametrize("dtype", NUMBER_DTYPES)
@pytest.mark.parametrize("shape", [(17,), (6, 7), (3, 4, 5)])
def test_h5chunk_writes_h5py_reads(tmp_path, dtype, shape):
    path = tmp_path / "w.h5"
    data = sample(dtype, shape)
    with h5chunk.File(path, "w") as f:
        d = f.create_dataset("grp/data", data=data)
        assert d.shape == shape
        assert d.dtype == np.dtype(dtype)
        assert d.ndim == len(shape) and d.size == data.size
        np.testing.assert_array_equal(d[...], data)
    with h5py.File(path, "r") as f:
        got = f["grp/data"]
        assert got.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(got[...], data)


@pytest.mark.parametrize("dtype", NUMBER_DTYPES + [">i4", ">f8"])
def test_h5py_writes_h5chunk_reads(tmp_path, dtype):
    path = tmp_path / "r.h5"
    data = sample(dtype, (9, 11))
    with h5py.File(path, "w") as f:
        f.create_dataset("chunked", data=data, chunks=(4, 3), compression="gzip", shuffle=True)
        f.create_dataset("contiguous", data=data)
        f.create_dataset("scalar", data=data[2, 3])
    with h5chunk.File(path) as f:
        for name in ["chunked", "contiguous"]:
            d = f[name]
            assert isinstance(d, h5chunk.Dataset)
            assert d.shape == data.shape
            assert d.dtype == np.dtype(dtype)
            np.testing.assert_array_equal(d[...], data)
            np.testing.assert_array_equal(np.asarray(d), data)
        assert f["chunked"].chunks == (4, 3)
        assert f["chunked"].compression == "gzip"
        assert f["chunked"].compression_opts == 4
        assert f["chunked"].shuffle
        assert f["contiguous"].chunks is None
        s = f["scalar"]
        assert s.shape == () and s.ndim == 0
        assert s[()] == data[2, 3]
        assert s[...].shape == ()


SELECTIONS = [
    (),
    Ellipsis,
    0,
    -1,
    slice(None),
    slice(2, 7),
    slice(-5, None),
    slice(None, -2),
    slice(1, 11, 3),
    slice(8, 2),
    (3, 4),
    (-1, -1),
    (slice(None), 2),
    (2, slice(None, None, 2)),
    (slice(1, -1), slice(2, 9, 4)),
    (Ellipsis, 5),
    (1, Ellipsis),
    (slice(3, 3), slice(None)),
    (np.int64(2), slice(0, 100)),
    [1, 3, 4],
    ([0, 9], 2),
    (slice(None), [0, 5, 11]),
    (slice(2, 8, 2), np.array([1, 2, 7])),
    (Ellipsis, [-3, -1]),
    np.arange(10) % 3 == 0,
    (4, np.arange(12) > 8),
]


@pytest.mark.parametrize("key", SELECTIONS, ids=repr)
def test_selections_read_as_h5py(tmp_path, key):
    path = tmp_path / "sel.h5"
    data = np.arange(10 * 12, dtype="f8").reshape(10, 12)
    with h5py.File(path, "w") as f:
        f.create_dataset("d", data=data, chunks=(3, 5))
    with h5py.File(path, "r") as f:
        want = f["d"][key]
    with h5chunk.File(path) as f:
        got = f["d"][key]
    assert type(got) is type(want)
    assert np.shape(got) == np.shape(want)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("key", SELECTIONS[2:], ids=repr)
def test_selections_write_as_h5py(tmp_path, key):
    data = np.arange(10 * 12, dtype="i4").reshape(10, 12)
    files = {}
    for lib in (h5py, h5chunk):
        path = tmp_path / f"{lib.__name__}.h5"
        with lib.File(path, "w") as f:
            d = f.create_dataset("d", data=data, chunks=(3, 5))
            shape = np.shape(data[key])
            d[key] = -np.arange(int(np.prod(shape)), dtype="i4").reshape(shape) - 1
            d[key] = d[key] * 2  # read back through the same selection
        files[lib] = path
    with h5py.File(files[h5py]) as a, h5py.File(files[h5chunk]) as b:
        np.testing.assert_array_equal(a["d"][...], b["d"][...])


def test_broadcast_and_scalar_writes(tmp_path):
    path = tmp_path / "b.h5"
    with h5chunk.File(path, "w") as f:
        d = f.create_dataset("d", shape=(4, 6), dtype="f4", fillvalue=-1.5)
        assert d.fillvalue == np.float32(-1.5)
        np.testing.assert_array_equal(d[...], np.full((4, 6), -1.5, "f4"))
        d[1] = 3
        d[:, 0] = np.arange(4)
        d[2:, 3:] = [[7, 8, 9]]
    want = np.full((4, 6), -1.5, "f4")
    want[1] = 3
    want[:, 0] = np.arange(4)
    want[2:, 3:] = [[7, 8, 9]]
    with h5py.File(path) as f:
        np.testing.assert_array_equal(f["d"][...], want)
        assert f["d"].fillvalue == np.float32(-1.5)


def test_create_dataset_options_read_by_h5py(tmp_path):
    path = tmp_path / "opts.h5"
    with h5chunk.File(path, "w") as f:
        f.create_dataset("gz", data=np.arange(1000.0), chunks=(100,), compression="gzip",
                         compression_opts=6, shuffle=True, fletcher32=True)
        f.create_dataset("lzf", data=np.arange(1000), compression="lzf")
        f.create_dataset("grow", shape=(0, 4), maxshape=(None, 4), dtype="i2")
        auto = f.create_dataset("auto", shape=(1000, 1000), dtype="f8")
        assert auto.chunks is not None and len(auto.chunks) == 2
    with h5py.File(path) as f:
        gz = f["gz"]
        assert (gz.compression, gz.compression_opts, gz.shuffle, gz.fletcher32) == ("gzip", 6, True, True)
        assert gz.chunks == (100,)
        np.testing.assert_array_equal(gz[...], np.arange(1000.0))
        assert f["lzf"].compression == "lzf"
        np.testing.assert_array_equal(f["lzf"][...], np.arange(1000))
        assert f["grow"].maxshape == (None, 4) and f["grow"].shape == (0, 4)
        assert f["auto"].shape == (1000, 1000)
    with h5chunk.File(path) as f:
        gz = f["gz"]
        assert (gz.compression, gz.compression_opts, gz.shuffle, gz.fletcher32) == ("gzip", 6, True, True)
        assert f["grow"].maxshape == (None, 4)


def test_append_and_resize(tmp_path):
    path = tmp_path / "log.h5"
    rows = np.arange(8 * 250, dtype="f8").reshape(250, 8)
    with h5chunk.File(path, "w") as f:
        d = f.create_dataset("log", shape=(0, 8), maxshape=(None, 8), chunks=(64, 8), dtype="f8")
        for row in rows[:100]:
            d.append(row)  # one row: the other dimensions' shape
        d.append(rows[100:250])  # many rows
        assert d.shape == (250, 8) and len(d) == 250 and d.len() == 250
        f.flush()
        with h5py.File(path, "r", locking=False) as g:  # flushed: h5py sees it, the writer still open
            np.testing.assert_array_equal(g["log"][...], rows)
        d.resize((300, 8))
        assert d.shape == (300, 8)
        d.resize(240, axis=0)
        assert d.shape == (240, 8)
        with pytest.raises(ValueError):
            d.append(np.zeros((2, 7)))
        b = f.create_dataset("flags", shape=(0,), maxshape=(None,), dtype=bool, chunks=(4,))
        b.append([True, False, True])
    with h5py.File(path) as f:
        np.testing.assert_array_equal(f["log"][...], rows[:240])
        np.testing.assert_array_equal(f["flags"][...], [True, False, True])


def test_groups_as_mappings(tmp_path):
    path = tmp_path / "g.h5"
    with h5py.File(path, "w") as f:
        f.create_group("b/c")
        f.create_dataset("a", data=[1, 2])
        f["b/d"] = np.arange(3)
    with h5chunk.File(path, "r") as f:
        assert f.keys() == ["a", "b"]
        assert list(f) == ["a", "b"] and len(f) == 2
        assert "b/c" in f and "b/x" not in f and "x" not in f
        assert isinstance(f["b"], h5chunk.Group) and isinstance(f["b/d"], h5chunk.Dataset)
        assert f["b"]["d"].name == "/b/d" and f["b"].name == "/b"
        assert f["b/c"].parent.name == "/b"
        assert [k for k, _ in f["b"].items()] == ["c", "d"]
        assert f.get("nothing") is None and f.get("nothing", 5) == 5
        seen = []
        f.visit(seen.append)
        assert seen == ["a", "b", "b/c", "b/d"]
        assert f.visititems(lambda n, o: n if isinstance(o, h5chunk.Dataset) and n.startswith("b") else None) == "b/d"
        assert f.filename == str(path) and f.mode == "r"
    with h5chunk.File(path, "a") as f:
        assert f.mode == "r+"
        g = f.require_group("b")
        assert g.name == "/b"
        f.create_group("x/y/z")
        # h5py makes such a group new-style whatever the bounds; h5chunk refuses, named.
        with pytest.raises(h5chunk.UnsupportedError):
            f.create_group("ordered", track_order=True)
        d = f.require_dataset("b/d", shape=(3,), dtype="i8")
        assert d.shape == (3,)
        with pytest.raises(TypeError):
            f.require_dataset("b/d", shape=(4,), dtype="i8")
    with h5py.File(path) as f:
        assert "x/y/z" in f


def test_attributes_both_ways(tmp_path):
    path = tmp_path / "attrs.h5"
    values = {
        "int": np.int32(7),
        "float": 2.5,
        "str": "kelvin",
        "bool": True,
        "vec": np.arange(4, dtype="u2"),
        "mat": np.ones((2, 3), dtype="f4"),
        "strs": ["a", "bc"],
        "bytes": b"fixed",
    }
    with h5chunk.File(path, "w") as f:
        d = f.create_dataset("d", data=[1, 2, 3])
        for k, v in values.items():
            d.attrs[k] = v
        f.attrs["title"] = "run 7"
        d.attrs.create("made", [1, 2, 3, 4], shape=(2, 2), dtype="i8")
        d.attrs.modify("int", np.int32(8))
        del d.attrs["float"]
        assert "float" not in d.attrs and "int" in d.attrs
    with h5py.File(path) as f:
        a = f["d"].attrs
        assert a["int"] == 8 and a["int"].dtype == np.int32
        assert "float" not in a
        assert a["str"] == "kelvin"
        assert a["bool"] == True and a["bool"].dtype == np.bool_  # noqa: E712
        np.testing.assert_array_equal(a["vec"], values["vec"])
        assert a["vec"].dtype == np.uint16
        np.testing.assert_array_equal(a["mat"], values["mat"])
        assert list(a["strs"]) == ["a", "bc"]
        assert a["bytes"] == b"fixed"
        np.testing.assert_array_equal(a["made"], [[1, 2], [3, 4]])
        assert f.attrs["title"] == "run 7"
        # h5py adds attributes of its own for h5chunk to read back.
        f2 = None
    with h5py.File(path, "a") as f:
        a = f["d"].attrs
        a["from_h5py"] = np.arange(6, dtype=">i4").reshape(2, 3)
        a["scalar"] = np.float64(1.25)
        a["vlen"] = "é"
        a["fixed"] = np.bytes_("abc")
    with h5chunk.File(path) as f:
        a = f["d"].attrs
        with h5py.File(path) as g:
            want = dict(g["d"].attrs.items())
        got = dict(a.items())
        assert sorted(got) == sorted(want) == sorted(a.keys())
        for k in want:
            assert type(got[k]) is type(want[k]), k
            np.testing.assert_array_equal(got[k], want[k])
        assert a.get("missing") is None
        with pytest.raises(KeyError):
            a["missing"]


def test_strings_and_compound_read_as_h5py(tmp_path):
    path = tmp_path / "types.h5"
    rec = np.array([(1, 2.5), (3, -1.0)], dtype=[("a", "<i4"), ("b", "<f8")])
    with h5py.File(path, "w") as f:
        f.create_dataset("vlen", data=["x", "yz", "ü"], dtype=h5py.string_dtype())
        f.create_dataset("fixed", data=np.array([b"ab", b"cde"], dtype="S3"))
        f.create_dataset("rec", data=rec)
        f.create_dataset("cplx", data=np.array([1 + 2j, 3 - 4j]))
    with h5py.File(path) as g, h5chunk.File(path) as f:
        for name in ["vlen", "fixed", "rec", "cplx"]:
            want, got = g[name][...], f[name][...]
            assert got.dtype == want.dtype, name
            np.testing.assert_array_equal(got, want)
            assert f[name].dtype == g[name].dtype
        assert f["vlen"][1] == b"yz"
        for key in ["a", ("b", slice(1, None)), (0, "a"), ("a", "b")]:
            want, got = g["rec"][key], f["rec"][key]
            assert type(got) is type(want)
            np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(f["rec"].fields("b")[...], g["rec"].fields("b")[...])
        np.testing.assert_array_equal(f["rec"].fields(["a"])[1:], g["rec"].fields(["a"])[1:])


def test_swmr_reader_refreshes(tmp_path):
    path = tmp_path / "swmr.h5"
    w = h5py.File(path, "w", libver="latest")
    d = w.create_dataset("x", shape=(0,), maxshape=(None,), chunks=(4,), dtype="i4")
    w.swmr_mode = True
    d.resize((5,))
    d[:] = np.arange(5)
    d.flush()
    try:
        with h5chunk.File(path, "r", swmr=True) as f:
            assert f.swmr_mode  # as h5py reports a SWMR reader
            r = f["x"]
            np.testing.assert_array_equal(r[...], np.arange(5))
            d.resize((9,))
            d[5:] = np.arange(5, 9)
            d.flush()
            r.refresh()
            assert r.shape == (9,)
            np.testing.assert_array_equal(r[...], np.arange(9))
    finally:
        w.close()


def test_swmr_writer_read_by_h5py(tmp_path):
    path = tmp_path / "swmr_w.h5"
    f = h5chunk.File(path, "w", libver="latest")
    d = f.create_dataset("x", shape=(0,), maxshape=(None,), chunks=(4,), dtype="f8")
    f.swmr_mode = True
    assert f.swmr_mode
    d.append(np.arange(6.0))
    f.flush()
    try:
        with h5py.File(path, "r", swmr=True) as g:
            r = g["x"]
            np.testing.assert_array_equal(r[...], np.arange(6.0))
            d.append(np.arange(6.0, 10.0))
            f.flush()
            r.refresh()
            np.testing.assert_array_equal(r[...], np.arange(10.0))
    finally:
        f.close()


def test_views_chunks_and_direct_io_as_h5py(tmp_path):
    path = tmp_path / "v.h5"
    data = np.arange(7 * 5, dtype="i4").reshape(7, 5)
    with h5py.File(path, "w") as f:
        f.create_dataset("d", data=data, chunks=(3, 2))
        f.create_dataset("z", data=np.arange(100.0), chunks=(10,), compression="gzip")
        f.create_dataset("s", data=["ab", "ü"], dtype=h5py.string_dtype())
    with h5py.File(path) as g, h5chunk.File(path) as f:
        d, want = f["d"], g["d"]
        assert list(d.iter_chunks()) == list(want.iter_chunks())
        got = d.astype("f8")[1:3]
        assert got.dtype == np.float64
        np.testing.assert_array_equal(got, want.astype("f8")[1:3])
        np.testing.assert_array_equal(f["s"].asstr()[...], g["s"].asstr()[...])
        assert f["s"].asstr()[1] == "ü"
        out = np.empty((2, 5), dtype="i4")
        d.read_direct(out, np.s_[4:6])
        np.testing.assert_array_equal(out, data[4:6])
        with pytest.raises(TypeError, match="C-contiguous"):
            d.read_direct(np.empty((5, 7), dtype="i4").T)  # Fortran order: refused
        mask, raw = f["z"].read_direct_chunk((10,))
        assert (mask, raw) == tuple(g["z"].id.read_direct_chunk((10,)))
    # A chunk written as stored bytes reads in h5py as the values compressed.
    import zlib
    with h5chunk.File(path, "a") as f:
        f["z"].write_direct_chunk((20,), zlib.compress(np.full(10, -1.0).tobytes()))
    with h5py.File(path) as g:
        np.testing.assert_array_equal(g["z"][20:30], np.full(10, -1.0))


def test_links_both_ways(tmp_path):
    target = tmp_path / "target.h5"
    with h5py.File(target, "w") as f:
        f["data/x"] = np.arange(5)
    path = tmp_path / "links.h5"
    with h5chunk.File(path, "w") as f:
        f["direct"] = np.arange(3.0)  # h5py: data assigned makes a dataset
        f["g/ext"] = h5chunk.ExternalLink("target.h5", "/data/x")
        link = f["g"].get("ext", getlink=True)
        assert isinstance(link, h5chunk.ExternalLink)
        assert (link.filename, link.path) == ("target.h5", "/data/x")
        assert f["g"].get("ext", getlink=True, getclass=True) is h5chunk.ExternalLink
        assert f.get("direct", getclass=True) is h5chunk.Dataset
        with pytest.raises(h5chunk.UnsupportedError):
            f["soft"] = h5chunk.SoftLink("/direct")
    with h5py.File(path) as f:
        np.testing.assert_array_equal(f["direct"][...], np.arange(3.0))
        np.testing.assert_array_equal(f["g/ext"][...], np.arange(5))
        assert f["g"].get("ext", getlink=True).filename == "target.h5"
    with h5py.File(path, "a") as f:
        f["soft"] = h5py.SoftLink("/direct")
    with h5chunk.File(path) as f:
        assert isinstance(f.get("direct", getlink=True), h5chunk.HardLink)
        assert f.get("soft", getlink=True).path == "/direct"
        np.testing.assert_array_equal(f["soft"][...], np.arange(3.0))
        np.testing.assert_array_equal(f["g/ext"][...], np.arange(5))


def test_file_and_parent_of_objects(tmp_path):
    path = tmp_path / "fp.h5"
    with h5chunk.File(path, "w") as f:
        d = f.create_dataset("a/b/d", data=np.arange(4))
        assert d.parent.name == "/a/b" and f["a/b"].parent.name == "/a"
        assert d.file.filename == str(path) and d.file.mode == "r+"
        assert f["a"].file.filename == str(path)
        d[0] = 9
        d.flush()
        with h5py.File(path, "r", locking=False) as g:
            assert g["a/b/d"][0] == 9
        d.file.close()  # closes the file, as h5py's d.file.close()
        with pytest.raises(OSError):
            f["a/b/d"][1] = 3  # closed: refused (h5chunk's API cannot tell bool(f) so)
    with h5py.File(path) as g:
        np.testing.assert_array_equal(g["a/b/d"][...], [9, 1, 2, 3])


def test_strings_compound_complex_written_read_by_h5py(tmp_path):
    path = tmp_path / "wtypes.h5"
    rec = np.array([(1, 2.5, b"ab"), (3, -1.0, b"c")],
                   dtype=[("a", "<i4"), ("b", "<f8"), ("c", "S2")])
    vlen = np.array(["x", "yz", "ü"], dtype=h5py.string_dtype())
    with h5chunk.File(path, "w") as f:
        f.create_dataset("vlen", data=vlen, dtype=h5py.string_dtype())
        f.create_dataset("fixed", data=np.array([b"ab", b"cde"], dtype="S3"))
        f.create_dataset("rec", data=rec)
        f.create_dataset("cplx", data=np.array([1 + 2j, 3 - 4j]))
        f.create_dataset("c8", data=np.array([1 - 1j], dtype="c8"))
        g = f.create_dataset("grow", shape=(0,), maxshape=(None,), dtype=h5py.string_dtype(),
                             chunks=(4,))
        g.append(["one", "two"])
        g.append("three")
        f["vlen"][1] = "changed"
        with pytest.raises(TypeError):
            f.create_dataset("u", data=np.array(["no"]))  # h5py: no conversion path for <U
    with h5py.File(path) as g, h5chunk.File(path) as f:
        assert list(g["vlen"].asstr()[...]) == ["x", "changed", "ü"]
        assert g["vlen"].dtype == h5py.string_dtype()
        np.testing.assert_array_equal(g["fixed"][...], [b"ab", b"cde"])
        assert g["rec"].dtype == rec.dtype
        np.testing.assert_array_equal(g["rec"][...], rec)
        assert g["cplx"].dtype == np.complex128 and g["c8"].dtype == np.complex64
        np.testing.assert_array_equal(g["cplx"][...], [1 + 2j, 3 - 4j])
        np.testing.assert_array_equal(g["c8"][...], np.array([1 - 1j], "c8"))
        assert list(g["grow"].asstr()[...]) == ["one", "two", "three"]
        for name in ["vlen", "fixed", "rec", "cplx", "c8", "grow"]:
            assert f[name].dtype == g[name].dtype, name
            np.testing.assert_array_equal(f[name][...], g[name][...])


def test_chunk_listing_as_h5py(tmp_path):
    path = tmp_path / "cl.h5"
    with h5py.File(path, "w", userblock_size=512) as f:
        d = f.create_dataset("d", shape=(10, 6), chunks=(4, 3), dtype="i2", compression="gzip")
        d[:5] = 1  # chunks of rows 0-7 allocated, rows 8-9 not
    with h5py.File(path) as g, h5chunk.File(path) as f:
        want = []
        g["d"].id.chunk_iter(lambda i: want.append((tuple(i.chunk_offset), i.filter_mask, i.byte_offset, i.size)))
        got = []
        f["d"].chunk_iter(lambda i: got.append((tuple(i.chunk_offset), i.filter_mask, i.byte_offset, i.size)))
        assert sorted(got) == sorted(want) and len(got) == 4
        assert f["d"].get_num_chunks() == g["d"].id.get_num_chunks()
        info = f["d"].get_chunk_info_by_coord((4, 3))
        want_info = g["d"].id.get_chunk_info_by_coord((4, 3))
        assert (info.byte_offset, info.size) == (want_info.byte_offset, want_info.size)
        assert f["d"].get_chunk_info_by_coord((8, 0)) is None


@pytest.mark.parametrize("durability", [None, "sync", "flush", "none"])
def test_durability_choices_write_files_h5py_reads(tmp_path, durability):
    path = tmp_path / "dur.h5"
    rows = np.arange(40, dtype="f8").reshape(5, 8)
    with h5chunk.File(path, "w", durability=durability) as f:
        d = f.create_dataset("log", shape=(0, 8), maxshape=(None, 8), chunks=(4, 8), dtype="f8")
        for r in rows[:3]:
            d.append(r)
            f.flush()
    with h5chunk.File(path, "r+", durability=durability) as f:
        f["log"].append(rows[3:])
    with h5py.File(path, "r") as f:
        np.testing.assert_array_equal(f["log"][...], rows)
    # No journal is left beside the file once it is closed, whatever the choice.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dur.h5"]


def test_durability_names_its_choices(tmp_path):
    with pytest.raises(ValueError, match="'sync', 'flush', 'none'"):
        h5chunk.File(tmp_path / "bad.h5", "w", durability="fsync")
    assert not (tmp_path / "bad.h5").exists()


def test_write_direct_as_h5py(tmp_path):
    src = np.arange(6 * 4, dtype="f4").reshape(6, 4) * 1.5
    files = {}
    for name, lib in (("ours.h5", h5chunk), ("theirs.h5", h5py)):
        path = tmp_path / name
        with lib.File(path, "w") as f:
            d = f.create_dataset("d", shape=(8, 4), dtype="f4", chunks=(3, 2), fillvalue=-1)
            d.write_direct(src, np.s_[1:3], np.s_[5:7])  # rows 1-2 of src into rows 5-6
            d.write_direct(np.ones(4, "f4"), None, np.s_[0])  # one row, its index dropped
            with pytest.raises(TypeError, match="Can't broadcast"):
                d.write_direct(src[:2])  # the whole dataset from 2 rows
            with pytest.raises(TypeError, match="Can't broadcast"):
                d[...] = src[:2]
        files[name] = path
    with h5py.File(files["ours.h5"]) as f, h5py.File(files["theirs.h5"]) as g:
        np.testing.assert_array_equal(f["d"][...], g["d"][...])


@pytest.mark.parametrize("dtype", ["i1", "u2", "<i4", ">i4", "f2", "<f4", ">f8", "?"])
def test_element_reads_as_h5py(tmp_path, dtype):
    """`d[i, j]` (a path of its own for numbers) gives h5py's numpy scalar, for every kind of
    integer key, and h5py's errors outside the shape."""
    path = tmp_path / "e.h5"
    data = sample(dtype, (5, 7))
    with h5py.File(path, "w") as g:
        g.create_dataset("d", data=data, chunks=(2, 3))
        g.create_dataset("v", data=data[0], chunks=(3,))
    with h5py.File(path) as g, h5chunk.File(path) as f:
        for name, keys in (("d", [(0, 0), (4, 6), (-1, -7), (2, np.int64(3)), (np.uint8(1), -2)]),
                           ("v", [0, 6, -1, -7, np.int32(3), (5,)])):
            for key in keys:
                want, got = g[name][key], f[name][key]
                assert type(got) is type(want), (name, key, type(got), type(want))
                assert got == want, (name, key)
        for bad in [(5, 0), (0, -8), (-6, 1)]:
            with pytest.raises(IndexError):
                f["d"][bad]
            with pytest.raises(IndexError):
                g["d"][bad]
        with pytest.raises(IndexError):
            f["v"][7]


def test_append_from_any_array_layout(tmp_path):
    """`append` takes a C-contiguous array of the dataset's type from its memory, and anything
    else (strided, another byte order or type, lists) through numpy; bad shapes are refused."""
    path = tmp_path / "a.h5"
    rows = np.arange(8 * 12, dtype="f8").reshape(12, 8)
    with h5chunk.File(path, "w") as f:
        d = f.create_dataset("log", shape=(0, 8), maxshape=(None, 8), chunks=(4, 8), dtype="f8")
        d.append(rows[0])  # one row, contiguous
        d.append(rows[1:3])  # two rows, contiguous
        d.append(np.asfortranarray(rows[3:5]))  # not C-contiguous
        d.append(rows[5:7].astype(">f8"))  # big-endian
        d.append(rows[7:9].astype("f4"))  # another type
        d.append(rows[9].tolist())  # a list
        d.append(np.ascontiguousarray(rows[10:12, ::-1])[:, ::-1])  # strided
        d.append(np.empty((0, 8)))  # nothing
        for bad in (np.zeros(7), np.zeros((2, 9)), np.zeros((1, 1, 8))):
            with pytest.raises(ValueError, match="do not fit"):
                d.append(bad)
        assert d.shape == (12, 8)
    with h5py.File(path) as g:
        np.testing.assert_array_equal(g["log"][...], rows)
