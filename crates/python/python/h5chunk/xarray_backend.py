"""xarray's `engine="h5chunk"`: netCDF-4 and HDF5 files read lazily through h5chunk, with the
dimension scales as dimensions and the HDF5 chunks as the preferred (dask) chunks.

    ds = xr.open_dataset("data.nc", engine="h5chunk")            # lazy
    ds = xr.open_dataset("data.nc", engine="h5chunk", chunks={})  # dask, one task per chunk

Arrays hold the file's name and the variable's path, not an open handle, so they pickle to
dask.distributed workers; each process opens a file once (`_open`) and reads with the GIL
released.
"""

import os
import threading

import numpy as np
from xarray.backends.common import AbstractDataStore, BackendArray, BackendEntrypoint
from xarray.backends.store import StoreBackendEntrypoint
from xarray.core import indexing
from xarray.core.utils import FrozenDict
from xarray.core.variable import Variable

import h5chunk

# What netCDF-4 and the dimension-scale convention keep in attributes for themselves; the
# netCDF library hides them, and so does this backend.
_HIDDEN = {
    "CLASS",
    "NAME",
    "DIMENSION_LIST",
    "REFERENCE_LIST",
    "_Netcdf4Dimid",
    "_Netcdf4Coordinates",
    "_nc3_strict",
    "_NCProperties",
}
_NOT_A_VARIABLE = "This is a netCDF dimension but not a netCDF variable"

_files = {}
_files_lock = threading.Lock()


def _open(filename):
    """This process's read-only handle on `filename`, opened once."""
    with _files_lock:
        f = _files.get(filename)
        if f is None or not f:
            f = h5chunk.File(filename, "r")
            _files[filename] = f
        return f


def _text(value):
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, np.ndarray) and value.dtype.kind == "O":
        return [_text(v) for v in value.tolist()]
    return value


def _attributes(obj):
    out = {}
    for name in obj.attrs.keys():
        if name in _HIDDEN:
            continue
        value = obj.attrs[name]
        # netCDF's attributes are one-dimensional; one value reads as a scalar, as the netCDF
        # library returns it.
        if isinstance(value, np.ndarray) and value.shape == (1,):
            value = value[0]
        out[name] = _text(value)
    return out


def _is_vlen_str(dtype):
    return dtype.kind == "O" and (dtype.metadata or {}).get("vlen") is str


class H5chunkArray(BackendArray):
    """One variable, read through h5chunk when xarray indexes it."""

    def __init__(self, filename, path, shape, dtype):
        self.filename = filename
        self.path = path
        self.shape = shape
        self.dtype = np.dtype(object) if _is_vlen_str(dtype) else dtype
        self._strings = _is_vlen_str(dtype)

    def __getitem__(self, key):
        return indexing.explicit_indexing_adapter(
            key, self.shape, indexing.IndexingSupport.BASIC, self._getitem
        )

    def _getitem(self, key):
        d = _open(self.filename)[self.path]
        if self._strings:
            return np.asarray(d.asstr()[key], dtype=object)
        return np.asarray(d[key])


class H5chunkStore(AbstractDataStore):
    """The variables and attributes of one group, for xarray's CF decoding."""

    def __init__(self, filename, group=None):
        self.filename = filename
        self.file = h5chunk.File(filename, "r")
        self.group = self.file[group] if group else self.file
        self._phony = {}

    def _dims(self, name, d):
        scales = d.dimension_scales()
        dims = []
        for i, attached in enumerate(scales):
            if attached:
                dims.append(attached[0].rsplit("/", 1)[-1])
            elif d.is_scale and d.ndim == 1:
                dims.append(name)
            else:
                # netCDF's name for a dimension without a scale, one per distinct length.
                n = d.shape[i]
                dims.append(self._phony.setdefault(n, f"phony_dim_{len(self._phony)}"))
        return tuple(dims)

    def open_store_variable(self, name, d):
        dims = self._dims(name, d)
        array = H5chunkArray(self.filename, d.name, d.shape, d.dtype)
        data = indexing.LazilyIndexedArray(array)
        encoding = {
            "dtype": str if _is_vlen_str(d.dtype) else d.dtype,
            "source": self.filename,
            "original_shape": d.shape,
        }
        if d.chunks:
            encoding["contiguous"] = False
            encoding["chunksizes"] = d.chunks
            encoding["preferred_chunks"] = dict(zip(dims, d.chunks))
        else:
            encoding["contiguous"] = True
            encoding["chunksizes"] = None
        if d.compression == "gzip":
            encoding["zlib"] = True
            encoding["complevel"] = d.compression_opts
        encoding["shuffle"] = d.shuffle
        encoding["fletcher32"] = d.fletcher32
        return Variable(dims, data, _attributes(d), encoding)

    def _datasets(self):
        for name, obj in self.group.items():
            if isinstance(obj, h5chunk.Dataset):
                yield name, obj

    def get_variables(self):
        out = {}
        for name, d in self._datasets():
            if d.is_scale and _text(d.attrs.get("NAME", b"")).startswith(_NOT_A_VARIABLE):
                continue
            out[name] = self.open_store_variable(name, d)
        return FrozenDict(out)

    def get_attrs(self):
        return FrozenDict(_attributes(self.group))

    def get_dimensions(self):
        dims = {}
        for name, d in self._datasets():
            for dim, n in zip(self._dims(name, d), d.shape):
                dims[dim] = n
        return FrozenDict(dims)

    def get_encoding(self):
        unlimited = set()
        for name, d in self._datasets():
            if d.is_scale and d.ndim == 1 and d.maxshape[0] is None:
                unlimited.add(name)
        return {"unlimited_dims": unlimited}

    def close(self):
        self.file.close()


class H5chunkBackendEntrypoint(BackendEntrypoint):
    """`xr.open_dataset(path, engine="h5chunk")`."""

    description = "Open netCDF-4 and HDF5 files with h5chunk (pure Rust, no libhdf5)"
    url = "https://example.invalid/h5chunk"
    open_dataset_parameters = (
        "filename_or_obj",
        "mask_and_scale",
        "decode_times",
        "concat_characters",
        "decode_coords",
        "drop_variables",
        "use_cftime",
        "decode_timedelta",
        "group",
    )

    def guess_can_open(self, filename_or_obj):
        try:
            path = os.fspath(filename_or_obj)
        except TypeError:
            return False
        return os.path.splitext(path)[1].lower() in {".h5", ".hdf5", ".he5", ".nc", ".nc4"}

    def open_dataset(
        self,
        filename_or_obj,
        *,
        mask_and_scale=True,
        decode_times=True,
        concat_characters=True,
        decode_coords=True,
        drop_variables=None,
        use_cftime=None,
        decode_timedelta=None,
        group=None,
    ):
        filename = os.path.abspath(os.fspath(filename_or_obj))
        store = H5chunkStore(filename, group=group)
        ds = StoreBackendEntrypoint().open_dataset(
            store,
            mask_and_scale=mask_and_scale,
            decode_times=decode_times,
            concat_characters=concat_characters,
            decode_coords=decode_coords,
            drop_variables=drop_variables,
            use_cftime=use_cftime,
            decode_timedelta=decode_timedelta,
        )
        ds.set_close(store.close)
        return ds
