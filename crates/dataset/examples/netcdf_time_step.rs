//! One time step of a netCDF-4 variable (ERA5, CMIP, WRF output): the 2-D field at one
//! index of its first (time) dimension, unpacked with its `scale_factor` and `add_offset`, its
//! `_FillValue` left out of the statistics, as xarray would show it.
//!
//! ```text
//! cargo run --example netcdf_time_step -- era5.nc t2m 12
//! ```
//!
//! The same in netCDF4-python / h5py:
//!
//! ```python
//! v = netCDF4.Dataset("era5.nc")["t2m"]         # or h5py.File("era5.nc")["t2m"]
//! field = v[12, :, :]                            # netCDF4 applies scale_factor/add_offset
//! print(v.units, field.shape, field.min(), field.max(), field.mean())
//! ```
//!
//! And with hdf5-metno: `ds.read_slice::<f64, _, Ix2>(s![12, .., ..])`, then the attributes by
//! hand as here.

use h5chunk::File;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(path), Some(name)) = (args.next(), args.next()) else {
        return Err("usage: netcdf_time_step FILE VARIABLE [STEP]".into());
    };
    let step: i64 = args.next().map_or(Ok(0), |s| s.parse())?;

    let file = File::open(&path)?;
    let var = file.dataset(&name)?;
    // The step's field: v[step, :, :] (a negative step counts from the end, as in numpy).
    let at = var.select(step)?;
    // Packed integers or floats alike read as f64: converted on read, as netCDF4 does.
    let values: Vec<f64> = at.read()?;

    // CF conventions: packed values, a fill value, units. Absent attributes are defaults.
    let number = |attr: &str, default: f64| -> h5chunk::Result<f64> {
        if var.attrs().contains(attr)? {
            var.attr(attr)?.value::<f64>()
        } else {
            Ok(default)
        }
    };
    let scale = number("scale_factor", 1.0)?;
    let offset = number("add_offset", 0.0)?;
    let fill = number("_FillValue", f64::NAN)?;
    let units = match var.attr("units") {
        Ok(a) => a.string()?,
        Err(_) => "(no units)".to_owned(),
    };

    let field: Vec<f64> = values
        .iter()
        .filter(|&&v| v != fill && !v.is_nan())
        .map(|&v| v * scale + offset)
        .collect();
    let (min, max, sum) = field.iter().fold(
        (f64::INFINITY, f64::NEG_INFINITY, 0.0),
        |(lo, hi, s), &v| (lo.min(v), hi.max(v), s + v),
    );
    println!(
        "{name}[{step}]: shape {:?}, {} values ({} fill), {units}",
        at.shape(),
        values.len(),
        values.len().saturating_sub(field.len())
    );
    if !field.is_empty() {
        println!(
            "min {min:.4} max {max:.4} mean {:.4}",
            sum / field.len() as f64
        );
    }
    Ok(())
}
