//! netCDF-4 files as the `netCDF4` Python package (libnetcdf over libhdf5) writes them, read
//! by h5chunk: every variable's values and every attribute equal to what netCDF4 reads.
//!
//! The file has what CF data carries: an unlimited time dimension (chunked, v1 B-tree), deflate
//! and shuffle, dimension scales (with their `REFERENCE_LIST` / `DIMENSION_LIST` attributes),
//! a variable-length string variable, a `char` array, a scalar, a subgroup, numbers of every
//! width, and global and variable attributes of numbers and text; and enough variables that the
//! root group's links go to dense storage (a fractal heap and a v2 B-tree of names).
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::cast_possible_truncation,
    clippy::float_cmp
)]

use h5chunk::{Attr, Dataset, File, FilterSpec, TypeClass, TypeDesc};
use h5chunk_testkit::interop;
use serde_json::Value;

/// Writes the file (argument 1) with netCDF4 and prints, as JSON, what netCDF4 reads back:
/// per variable its HDF5 path, dtype, shape, values (flattened; strings for string and char
/// variables) and attributes; and the global attributes.
const WRITE: &str = r#"
import json, sys
import numpy as np, netCDF4

path = sys.argv[1]
ds = netCDF4.Dataset(path, "w", format="NETCDF4")
ds.title = "h5chunk interop"
ds.Conventions = "CF-1.8"
ds.setncattr("version", np.int32(3))
ds.setncattr("scale_factors", np.array([0.5, 2.0, -1.25]))
ds.createDimension("time", None)
ds.createDimension("lat", 5)
ds.createDimension("lon", 7)
ds.createDimension("nchar", 4)
ds.createDimension("station", 3)
t = ds.createVariable("time", "f8", ("time",))
t.units = "days since 2000-01-01"
t.calendar = "standard"
lat = ds.createVariable("lat", "f4", ("lat",))
lat.units = "degrees_north"
lat[:] = np.linspace(-60, 60, 5)
lon = ds.createVariable("lon", "f4", ("lon",))
lon.units = "degrees_east"
lon[:] = np.linspace(0, 300, 7)
tas = ds.createVariable("tas", "f4", ("time", "lat", "lon"), zlib=True, complevel=4,
                        shuffle=True, fill_value=np.float32(-999.0))
tas.units = "K"
tas.standard_name = "air_temperature"
tas.valid_range = np.array([150, 350], "f4")
pr = ds.createVariable("pr", "f8", ("time", "lat", "lon"), zlib=True, chunksizes=(2, 5, 7))
count = ds.createVariable("count", "i4", ("time",))
count.long_name = "events"
mask = ds.createVariable("mask", "i1", ("lat", "lon"))
flags = ds.createVariable("flags", "u2", ("station",))
flags.flag_values = np.array([1, 2, 4], "u2")
big = ds.createVariable("big", "i8", ("station",))
ubig = ds.createVariable("ubig", "u8", ("station",))
small = ds.createVariable("small", "i2", ("lat",), zlib=True)
name = ds.createVariable("station_name", str, ("station",))
name.cf_role = "timeseries_id"
code = ds.createVariable("code", "S1", ("station", "nchar"))
scalar = ds.createVariable("scalar", "f8")
scalar[...] = 2.5
for i in range(6):
    t[i] = i
    tas[i] = np.arange(35, dtype="f4").reshape(5, 7) + 100 * i
    count[i] = i * i
for i in range(0, 6, 2):  # pr's chunks hold two steps
    pr[i:i + 2] = np.full((2, 5, 7), i * 0.5)
tas[3, 2, 2] = np.ma.masked  # the fill value, stored
mask[:] = np.arange(35).reshape(5, 7) % 3 - 1
flags[:] = [1, 65535, 7]
big[:] = [-(2**40), 0, 2**50]
ubig[:] = [0, 2**63, 2**64 - 1]
small[:] = [-32768, -1, 0, 1, 32767]
name[:] = np.array(["alpha", "béta", "gamma-long-name"], dtype=object)
code[:] = netCDF4.stringtochar(np.array(["AB", "CDEF", "G"], "S4"))
g = ds.createGroup("obs")
g.createDimension("n", 4)
g.source = "buoys"
v = g.createVariable("v", "f4", ("n",))
v[:] = [1, 2, 3, 4]
v.note = "in a group"
ds.close()

def plain(x):
    if isinstance(x, bytes):
        return x.decode()
    if isinstance(x, str):
        return x
    a = np.asarray(x)
    if a.dtype.kind in "SUO":
        return [s.decode() if isinstance(s, bytes) else s for s in a.ravel().tolist()]
    return [int(e) if a.dtype.kind in "iub" else float(e) for e in a.ravel().tolist()]

out = {"globals": {}, "variables": []}
ds = netCDF4.Dataset(path)
ds.set_auto_maskandscale(False)
ds.set_auto_chartostring(False)
out["globals"] = {k: plain(ds.getncattr(k)) for k in ds.ncattrs()}
def walk(grp, prefix):
    for vname, var in grp.variables.items():
        var.set_auto_maskandscale(False)
        var.set_auto_chartostring(False)
        data = var[...]
        out["variables"].append({
            "path": prefix + vname,
            "dtype": "str" if var.dtype is str else np.dtype(var.dtype).str,
            "shape": list(np.shape(data)),
            "values": plain(data),
            "attrs": {k: plain(var.getncattr(k)) for k in var.ncattrs()},
        })
    for gname, sub in grp.groups.items():
        out.setdefault("groups", {})[prefix + gname] = {
            k: plain(sub.getncattr(k)) for k in sub.ncattrs()}
        walk(sub, prefix + gname + "/")
walk(ds, "")
print(json.dumps(out))
"#;

/// A dataset's elements as JSON values: numbers (integers exactly) or strings.
fn values(d: &Dataset) -> Vec<Value> {
    let t = d.dtype();
    match t.class {
        TypeClass::FixedString | TypeClass::VarLenString => d
            .read_strings()
            .unwrap()
            .into_iter()
            .map(Value::from)
            .collect(),
        _ => numbers(t, &d.read_raw().unwrap()),
    }
}

/// Little-endian elements of `t` as JSON numbers.
fn numbers(t: TypeDesc, le: &[u8]) -> Vec<Value> {
    le.chunks_exact(t.size)
        .map(|e| {
            let mut b = [0u8; 8];
            b[..t.size].copy_from_slice(e);
            let raw = u64::from_le_bytes(b);
            let shift = 64 - 8 * t.size as u32;
            match (t.class, t.size) {
                (TypeClass::Float, 4) => Value::from(f64::from(f32::from_bits(raw as u32))),
                (TypeClass::Float, _) => Value::from(f64::from_bits(raw)),
                (TypeClass::Int, _) => Value::from(((raw << shift) as i64) >> shift),
                (TypeClass::Uint, _) => Value::from(raw),
                other => panic!("not a number type: {other:?}"),
            }
        })
        .collect()
}

/// An attribute as netCDF4 gives it: a string, or a list of numbers or strings.
fn attr_value(a: &Attr) -> Value {
    if let Ok(s) = a.strings() {
        return if a.shape().is_some_and(|s| s.is_empty()) || s.len() == 1 {
            Value::from(s.into_iter().next().unwrap())
        } else {
            Value::from(s)
        };
    }
    let t = a.dtype().unwrap();
    let mut le = a.raw().to_vec();
    t.to_from_le(&mut le);
    Value::from(numbers(t, &le))
}

fn check_attrs(what: &str, attrs: &[Attr], want: &Value) {
    for (name, value) in want.as_object().unwrap() {
        let a = attrs
            .iter()
            .find(|a| a.name() == name)
            .unwrap_or_else(|| panic!("{what}: no attribute {name}"));
        assert_eq!(&attr_value(a), value, "{what}: attribute {name}");
    }
}

#[test]
fn a_netcdf4_file_reads_as_netcdf4_reads_it() {
    let Some(python) = interop::python("a_netcdf4_file_reads_as_netcdf4_reads_it") else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("h5chunk-netcdf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("cf.nc");
    let out = interop::run_python(&python, WRITE, &[path.to_str().unwrap()]);
    let want: Value = serde_json::from_str(&out).unwrap();

    let file = File::open(&path).unwrap();
    check_attrs(
        "/",
        &file.root().unwrap().attrs().all().unwrap(),
        &want["globals"],
    );
    for (group, attrs) in want["groups"].as_object().unwrap() {
        check_attrs(
            group,
            &file.group(group).unwrap().attrs().all().unwrap(),
            attrs,
        );
    }
    let variables = want["variables"].as_array().unwrap();
    assert!(variables.len() >= 12, "{} variables", variables.len());
    // The root's members in creation order, as netCDF4 lists its variables (the group tracks
    // it); name order otherwise.
    let root = file.root().unwrap();
    assert!(root.tracks_creation_order().unwrap());
    let in_root: Vec<&str> = variables
        .iter()
        .map(|v| v["path"].as_str().unwrap())
        .filter(|p| !p.contains('/'))
        .collect();
    let ours: Vec<String> = root
        .members_in_creation_order()
        .unwrap()
        .into_iter()
        .map(|(n, _)| n)
        .filter(|n| in_root.contains(&n.as_str()))
        .collect();
    assert_eq!(ours, in_root);
    let by_name: Vec<String> = root
        .members()
        .unwrap()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert!(by_name.windows(2).all(|w| w[0] < w[1]));
    let mut strings = 0;
    for v in variables {
        let path = v["path"].as_str().unwrap();
        let d = file.dataset(path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let shape: Vec<u64> = v["shape"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n.as_u64().unwrap())
            .collect();
        assert_eq!(d.shape(), shape, "{path}: shape");
        let dtype = v["dtype"].as_str().unwrap();
        match dtype {
            "str" => assert_eq!(d.dtype().class, TypeClass::VarLenString, "{path}"),
            s if s.starts_with("|S") => {
                assert_eq!(d.dtype().class, TypeClass::FixedString, "{path}");
                assert_eq!(d.dtype().numpy(), dtype, "{path}");
            }
            _ => assert_eq!(d.dtype().numpy(), dtype, "{path}: dtype"),
        }
        if !d.dtype().is_number() {
            strings += 1;
        }
        assert_eq!(&Value::from(values(&d)), &v["values"], "{path}: values");
        check_attrs(path, &d.attrs().all().unwrap(), &v["attrs"]);
    }
    assert_eq!(strings, 2, "the string variable and the char array");
    // The dimensions netCDF4 gives each variable are the scales its DIMENSION_LIST names.
    let tas = file.dataset("tas").unwrap();
    assert_eq!(
        tas.dimension_scales().unwrap(),
        [
            vec!["/time".to_owned()],
            vec!["/lat".into()],
            vec!["/lon".into()]
        ]
    );
    let v = file.dataset("obs/v").unwrap();
    assert_eq!(v.dimension_scales().unwrap(), [vec!["/obs/n".to_owned()]]);
    // Every dataset, dimension scales without values included, opens; `check` finds the file
    // sound, its dense root group too.
    let report = file.check();
    assert!(report.is_clean(), "{report:?}");
    drop(file);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Reads the file h5chunk wrote (argument 1) with netCDF4 and with xarray, and prints what
/// they see: dimensions, each variable's dimensions, values and attributes.
const READ_BACK: &str = r#"
import json, sys
import numpy as np, netCDF4, xarray

path = sys.argv[1]
out = {}
with netCDF4.Dataset(path) as ds:
    out["dims"] = {k: len(v) for k, v in ds.dimensions.items()}
    out["unlimited"] = [k for k, v in ds.dimensions.items() if v.isunlimited()]
    out["globals"] = {k: str(ds.getncattr(k)) for k in ds.ncattrs()}
    out["vars"] = {}
    for name, v in ds.variables.items():
        v.set_auto_maskandscale(False)
        out["vars"][name] = {
            "dims": list(v.dimensions),
            "values": np.asarray(v[...], dtype="f8").ravel().tolist(),
            "attrs": {k: (np.asarray(v.getncattr(k)).tolist() if not isinstance(v.getncattr(k), str)
                          else v.getncattr(k)) for k in v.ncattrs()},
        }
with xarray.open_dataset(path, engine="netcdf4", mask_and_scale=False, decode_times=False) as x:
    out["xarray"] = {
        "tas_dims": list(x["tas"].dims),
        "coords": sorted(x.coords),
        "tas": np.asarray(x["tas"].values, dtype="f8").ravel().tolist(),
        "lat": np.asarray(x["lat"].values, dtype="f8").tolist(),
        "tas_at": float(x["tas"].sel(time=2.0, lat=30.0, lon=120.0)),
    }
print(json.dumps(out))
"#;

#[test]
fn a_file_h5chunk_writes_with_dimension_scales_opens_in_netcdf4_and_xarray() {
    let Some(python) = interop::python("a_file_h5chunk_writes_opens_in_netcdf4_and_xarray") else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("h5chunk-netcdf-w-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("ours.nc");
    let (nt, ny, nx) = (4u64, 3u64, 5u64);
    let lat_values = [-30.0f32, 0.0, 30.0];
    let lon_values: Vec<f32> = (0..nx).map(|i| i as f32 * 60.0).collect();
    let tas_values: Vec<f32> = (0..nt * ny * nx).map(|i| 200.0 + i as f32 * 0.5).collect();
    {
        let file = File::create(&path).unwrap();
        let root = file.root().unwrap();
        root.attrs().set_str("title", "written by h5chunk").unwrap();
        root.attrs().set_str("Conventions", "CF-1.8").unwrap();
        let time = file
            .new_dataset::<f64>()
            .shape(&[0])
            .max_shape(&[None])
            .chunk(&[16])
            .create("time")
            .unwrap();
        let lat = file
            .new_dataset::<f32>()
            .shape(&[ny])
            .chunk(&[ny])
            .create("lat")
            .unwrap();
        let lon = file
            .new_dataset::<f32>()
            .shape(&[nx])
            .chunk(&[nx])
            .create("lon")
            .unwrap();
        lat.write(&lat_values).unwrap();
        lon.write(&lon_values).unwrap();
        let tas = file
            .new_dataset::<f32>()
            .shape(&[0, ny, nx])
            .max_shape(&[None, Some(ny), Some(nx)])
            .chunk(&[1, ny, nx])
            .fill_value(-999.0f32)
            .filter(FilterSpec::Shuffle)
            .filter(FilterSpec::Deflate(4))
            .create("tas")
            .unwrap();
        for (i, step) in tas_values.chunks((ny * nx) as usize).enumerate() {
            time.append(&[i as f64]).unwrap();
            tas.append(step).unwrap();
        }
        for (d, (name, id)) in [
            (&time, ("time", 0i32)),
            (&lat, ("lat", 1)),
            (&lon, ("lon", 2)),
        ] {
            d.make_scale(name).unwrap();
            d.attrs().set_scalar("_Netcdf4Dimid", id).unwrap();
        }
        time.attrs()
            .set_str("units", "days since 2000-01-01")
            .unwrap();
        lat.attrs().set_str("units", "degrees_north").unwrap();
        lon.attrs().set_str("units", "degrees_east").unwrap();
        tas.attrs().set_str("units", "K").unwrap();
        tas.attrs()
            .set_str("standard_name", "air_temperature")
            .unwrap();
        tas.attrs().set("_FillValue", &[-999.0f32]).unwrap();
        for (dim, scale) in [&time, &lat, &lon].into_iter().enumerate() {
            tas.attach_scale(scale, dim).unwrap();
        }
        // Attaching twice changes nothing; a scale must be one.
        tas.attach_scale(&lat, 1).unwrap();
        assert!(tas.attach_scale(&tas, 0).is_err());
        assert!(time.is_scale() && !tas.is_scale());
        file.close().unwrap();
    }
    if let Some(h5dump) = interop::h5dump("a_file_h5chunk_writes_opens_in_netcdf4_and_xarray") {
        interop::h5dump_ok(&h5dump, &path);
    }
    let out = interop::run_python(&python, READ_BACK, &[path.to_str().unwrap()]);
    let got: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        got["dims"],
        serde_json::json!({"time": nt, "lat": ny, "lon": nx})
    );
    assert_eq!(got["unlimited"], serde_json::json!(["time"]));
    assert_eq!(got["globals"]["title"], "written by h5chunk");
    let vars = &got["vars"];
    assert_eq!(
        vars["tas"]["dims"],
        serde_json::json!(["time", "lat", "lon"])
    );
    assert_eq!(vars["time"]["dims"], serde_json::json!(["time"]));
    let as_f64 = |v: &[f32]| Value::from(v.iter().map(|&x| f64::from(x)).collect::<Vec<_>>());
    assert_eq!(vars["tas"]["values"], as_f64(&tas_values));
    assert_eq!(vars["lat"]["values"], as_f64(&lat_values));
    assert_eq!(
        vars["time"]["values"],
        serde_json::json!([0.0, 1.0, 2.0, 3.0])
    );
    assert_eq!(vars["tas"]["attrs"]["units"], "K");
    assert_eq!(
        vars["tas"]["attrs"]["_FillValue"],
        serde_json::json!(-999.0)
    );
    assert_eq!(vars["lat"]["attrs"]["units"], "degrees_north");
    // xarray: the same variable on named, coordinate-carrying dimensions.
    let x = &got["xarray"];
    assert_eq!(x["tas_dims"], serde_json::json!(["time", "lat", "lon"]));
    assert_eq!(x["coords"], serde_json::json!(["lat", "lon", "time"]));
    assert_eq!(x["tas"], as_f64(&tas_values));
    assert_eq!(x["lat"], as_f64(&lat_values));
    let at = (2 * ny * nx + 2 * nx + 2) as usize;
    assert_eq!(x["tas_at"], Value::from(f64::from(tas_values[at])));
    // h5chunk reads its own scales back as the netCDF reader does.
    let file = File::open(&path).unwrap();
    let tas = file.dataset("tas").unwrap();
    assert!(file.dataset("lat").unwrap().is_scale());
    assert_eq!(
        tas.attr("DIMENSION_LIST").unwrap().shape(),
        Some(&[3u64][..])
    );
    assert!(file.check().is_clean());
    drop((tas, file));
    std::fs::remove_dir_all(&dir).unwrap();
}
