"""The Python readers of `cargo xtask reach`: h5py (with hdf5plugin, the reference) and pyfive.

usage: py_reader.py h5py|pyfive FILE

Prints one JSON line per dataset found (see common.rs for the value forms): numbers as
little-endian values of the stored size, other fixed-size types as the file's bytes,
variable-length strings as each string's UTF-8 bytes and a NUL, a null dataspace as "empty",
other variable-length types as "vlen".
"""
import hashlib
import json
import sys

import numpy as np


def emit(rec):
    sys.stdout.write(json.dumps(rec) + "\n")
    sys.stdout.flush()


def sha(b):
    return hashlib.sha256(b).hexdigest()


def strings_hash(values):
    out = bytearray()
    for x in np.asarray(values, dtype=object).reshape(-1):
        if isinstance(x, bytes):
            x = x.decode("utf-8", "replace")
        out += str(x).encode("utf-8") + b"\0"
    return sha(bytes(out))


def number_hash(a, dt):
    a = np.ascontiguousarray(a)
    return sha(a.astype(dt.newbyteorder("<")).tobytes())


def packed_hash(a):
    """A compound's values without the bytes between its members (what a reader that builds
    the records itself leaves there is not a value)."""
    from numpy.lib import recfunctions

    a = np.ascontiguousarray(a)
    return sha(np.ascontiguousarray(recfunctions.repack_fields(a, recurse=True)).tobytes())


def join(parent, name):
    return "/" + name if parent == "/" else parent + "/" + name


def h5py_reader(path):
    import h5py

    try:
        import hdf5plugin  # noqa: F401  (registers the filters h5py users have)
    except ImportError:
        pass

    def read(obj):
        dt = obj.dtype
        if obj.shape is None:
            return None, "empty"
        shape = list(obj.shape)
        if dt.kind in "iufb" and dt.subdtype is None and dt.names is None:
            return shape, number_hash(obj[()], dt)
        if dt.kind == "O" and h5py.check_string_dtype(dt) is not None:
            return shape, strings_hash(obj[()])
        if dt.hasobject:
            obj[()]
            return shape, "vlen"
        tid = obj.id.get_type()
        n = obj.id.get_space().get_simple_extent_npoints()
        buf = np.zeros(n * tid.get_size(), dtype=np.uint8)
        if n:
            obj.id.read(h5py.h5s.ALL, h5py.h5s.ALL, buf, mtype=tid)
        if dt.names is not None:
            return shape, sha(buf.tobytes()), packed_hash(obj[()])
        return shape, sha(buf.tobytes())

    def walk(g, gpath, seen):
        try:
            names = list(g.keys())
        except Exception as e:
            emit({"path": gpath.rstrip("/") + "/*", "err": "%s: %s" % (type(e).__name__, e)})
            return
        for name in names:
            p = join(gpath, name)
            try:
                link = g.get(name, getlink=True)
                if isinstance(link, (h5py.SoftLink, h5py.ExternalLink)):
                    continue
                obj = g[name]
            except Exception as e:
                emit({"path": p, "err": "%s: %s" % (type(e).__name__, e)})
                continue
            if isinstance(obj, h5py.Group):
                info = h5py.h5o.get_info(obj.id)
                key = info.token if hasattr(info, "token") else info.addr
                if key not in seen:
                    seen.add(key)
                    walk(obj, p, seen)
            elif isinstance(obj, h5py.Dataset):
                try:
                    rec = read(obj)
                    out = {"path": p, "shape": rec[0], "hash": rec[1]}
                    if len(rec) > 2:
                        out["packed"] = rec[2]
                    emit(out)
                except Exception as e:
                    emit({"path": p, "err": "%s: %s" % (type(e).__name__, e)})

    with h5py.File(path, "r") as f:
        walk(f, "/", set())


def pyfive_reader(path):
    import pyfive

    def read(obj):
        dt = obj.dtype
        shape = obj.shape
        if shape is None:
            return None, "empty"
        shape = [int(s) for s in shape]
        data = obj[()]
        if isinstance(dt, np.dtype) and dt.kind in "iufb" and dt.subdtype is None and dt.names is None:
            return shape, number_hash(data, dt)
        if isinstance(dt, np.dtype) and dt.names is not None and not dt.hasobject:
            # Compared with h5py's records member by member (see packed_hash).
            return shape, packed_hash(data)
        if isinstance(dt, np.dtype) and dt.kind in "SVac" or (
            isinstance(dt, np.dtype) and dt.subdtype is not None and not dt.hasobject
        ):
            return shape, sha(np.ascontiguousarray(data).tobytes())
        flat = np.asarray(data, dtype=object).reshape(-1)
        if all(isinstance(x, (str, bytes)) for x in flat):
            return shape, strings_hash(flat)
        return shape, "vlen"

    def walk(g, gpath, depth):
        if depth > 64:
            return
        try:
            names = list(g.keys())
        except Exception as e:
            emit({"path": gpath.rstrip("/") + "/*", "err": "%s: %s" % (type(e).__name__, e)})
            return
        for name in names:
            p = join(gpath, name)
            try:
                obj = g[name]
            except Exception as e:
                emit({"path": p, "err": "%s: %s" % (type(e).__name__, e)})
                continue
            if isinstance(obj, pyfive.Group):
                walk(obj, p, depth + 1)
            elif isinstance(obj, pyfive.Dataset):
                try:
                    shape, h = read(obj)
                    emit({"path": p, "shape": shape, "hash": h})
                except Exception as e:
                    emit({"path": p, "err": "%s: %s" % (type(e).__name__, e)})

    walk(pyfive.File(path), "/", 0)


def main():
    reader, path = sys.argv[1], sys.argv[2]
    try:
        {"h5py": h5py_reader, "pyfive": pyfive_reader}[reader](path)
    except Exception as e:
        emit({"file_err": "%s: %s" % (type(e).__name__, e)})


if __name__ == "__main__":
    main()
