"""xarray's engine="h5chunk": netCDF-4 files (written by the netCDF4 package) and plain HDF5
files open equal to netCDF4's and h5netcdf's reading, lazily, with dask chunks that follow the
HDF5 chunks, and the arrays pickle to other processes."""

import pickle

import numpy as np
import pandas as pd
import pytest

xr = pytest.importorskip("xarray")
pytest.importorskip("netCDF4")

import h5py  # noqa: E402


@pytest.fixture
def netcdf_file(tmp_path):
    t = pd.date_range("2026-01-01", periods=6, freq="D")
    ds = xr.Dataset(
        {
            "temp": (("time", "x"), np.arange(24, dtype="f4").reshape(6, 4),
                     {"units": "K", "long_name": "temperature"}),
            "packed": (("time",), np.array([1.5, np.nan, 2.5, 3.0, 4.0, 5.5])),
            "label": (("x",), np.array(["a", "bb", "ccc", "d"], dtype=object)),
            "nodim": (("y",), np.arange(3)),
        },
        coords={"time": t, "x": np.array([10, 20, 30, 40])},
        attrs={"title": "test", "version": 3},
    )
    encoding = {
        "temp": {"zlib": True, "chunksizes": (2, 4)},
        "packed": {"dtype": "i2", "scale_factor": 0.5, "_FillValue": -1},
    }
    path = tmp_path / "x.nc"
    ds.to_netcdf(path, engine="netcdf4", encoding=encoding, unlimited_dims=["time"])
    return path


def test_netcdf4_file_opens_identical(netcdf_file):
    want = xr.open_dataset(netcdf_file, engine="netcdf4").load()
    lazy = xr.open_dataset(netcdf_file, engine="h5chunk")
    assert lazy.temp.encoding["chunksizes"] == (2, 4)
    assert lazy.temp.encoding["zlib"] and lazy.temp.encoding["preferred_chunks"] == {"time": 2, "x": 4}
    xr.testing.assert_identical(lazy.isel(time=slice(1, 5, 2)).load(), want.isel(time=slice(1, 5, 2)))
    got = lazy.load()
    xr.testing.assert_identical(got, want)
    for name in want.variables:
        assert got[name].attrs == want[name].attrs, name
    raw = xr.open_dataset(netcdf_file, engine="h5chunk", decode_times=False, mask_and_scale=False)
    raw_want = xr.open_dataset(netcdf_file, engine="netcdf4", decode_times=False, mask_and_scale=False)
    xr.testing.assert_identical(raw.load(), raw_want.load())
    lazy.close()


def test_dask_chunks_follow_hdf5_chunks(netcdf_file):
    pytest.importorskip("dask")
    ds = xr.open_dataset(netcdf_file, engine="h5chunk", chunks={})
    assert ds.temp.chunks == ((2, 2, 2), (4,))
    want = xr.open_dataset(netcdf_file, engine="netcdf4").load()
    xr.testing.assert_identical(ds.compute(), want)
    # What dask.distributed sends to its workers: the arrays pickle (name and path, no handle).
    arr = ds.temp.variable._data
    np.testing.assert_array_equal(np.asarray(pickle.loads(pickle.dumps(arr))), want.temp.values)


def test_open_mfdataset_in_processes(tmp_path, netcdf_file):
    pytest.importorskip("dask")
    ds = xr.open_dataset(netcdf_file, engine="netcdf4").load()
    paths = []
    for i, part in enumerate([ds.isel(time=slice(0, 3)), ds.isel(time=slice(3, 6))]):
        p = tmp_path / f"part{i}.nc"
        part.to_netcdf(p, engine="netcdf4", encoding={"temp": {"chunksizes": (1, 4)}})
        paths.append(p)
    got = xr.open_mfdataset(paths, engine="h5chunk", parallel=True, combine="by_coords", data_vars="minimal",
                            compat="no_conflicts")
    want = xr.open_mfdataset(paths, engine="netcdf4", combine="by_coords", data_vars="minimal",
                            compat="no_conflicts")
    assert got.temp.chunks == ((1, 1, 1, 1, 1, 1), (4,))
    # Tasks run in other processes: the arrays are pickled there and read by h5chunk.
    xr.testing.assert_identical(got.compute(scheduler="processes"), want.compute())


def test_plain_hdf5_file_has_phony_dims(tmp_path):
    path = tmp_path / "plain.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("a", data=np.arange(12.0).reshape(3, 4), chunks=(3, 2))
        f.create_dataset("b", data=np.arange(4))
        f.attrs["note"] = "plain"
    ds = xr.open_dataset(path, engine="h5chunk")
    assert ds.a.dims == ("phony_dim_0", "phony_dim_1") and ds.b.dims == ("phony_dim_1",)
    np.testing.assert_array_equal(ds.a.values, np.arange(12.0).reshape(3, 4))
    assert ds.attrs["note"] == "plain"
    assert ds.a.encoding["preferred_chunks"] == {"phony_dim_0": 3, "phony_dim_1": 2}
