//! The programs of `examples/` run as a user runs them, against files real writers made: the
//! logger (file and dataset attributes, appends; h5py reads the log), one time step of a
//! netCDF-4 variable (netCDF4 writes it, the numbers printed equal numpy's), and the SWMR
//! watcher (following an h5chunk SWMR writer in this process).
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used
)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use h5chunk::{File, FileOptions};
use h5chunk_testkit::interop;

fn tmp(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("examples");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// The example program `name`, built by `cargo test` beside this test's binary.
fn example(name: &str) -> Command {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap().parent().unwrap().join("examples");
    Command::new(dir.join(name))
}

fn run(mut cmd: Command) -> String {
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{cmd:?}: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

#[test]
fn the_logger_appends_with_attributes_and_h5py_reads_the_log() {
    let path = tmp("log.h5");
    let _ = std::fs::remove_file(&path);
    for _ in 0..2 {
        let mut cmd = example("append_logger");
        cmd.arg(&path).arg("2500");
        let out = run(cmd);
        assert!(
            out.contains("thermocouple log, units s since 1970-01-01 and degC"),
            "{out}"
        );
    }
    let f = File::open(&path).unwrap();
    assert_eq!(f.attr("sensor_id").unwrap().value::<u32>().unwrap(), 7);
    assert_eq!(f.dataset("reading").unwrap().shape(), [5000]);
    if let Some(python) = interop::python("the_logger_appends_with_attributes") {
        let out = interop::run_python(
            &python,
            "import sys, h5py\nf = h5py.File(sys.argv[1], 'r')\nprint(f.attrs['title'], f['time'].attrs['units'], f['reading'].shape, f['reading'].attrs['units'])",
            &[path.to_str().unwrap()],
        );
        assert_eq!(
            out.trim(),
            "thermocouple log s since 1970-01-01 (5000,) degC"
        );
    }
}

/// A packed netCDF-4 variable as ERA5 files hold one: int16 with scale, offset and a fill
/// value. Prints what the example must print for step 1.
const NETCDF: &str = r#"
import sys, numpy as np, netCDF4
ds = netCDF4.Dataset(sys.argv[1], "w", format="NETCDF4")
ds.createDimension("time", None); ds.createDimension("lat", 3); ds.createDimension("lon", 4)
v = ds.createVariable("t2m", "i2", ("time", "lat", "lon"), fill_value=np.int16(-32767), zlib=True)
v.scale_factor = 0.01; v.add_offset = 280.0; v.units = "K"
raw = np.arange(2 * 3 * 4, dtype="i2").reshape(2, 3, 4) * 37 - 200
raw[1, 0, 0] = -32767
v.set_auto_maskandscale(False)
v[:] = raw
ds.close()
ds = netCDF4.Dataset(sys.argv[1])
field = ds["t2m"][1, :, :]
print(f"t2m[1]: shape [3, 4], 12 values ({int(np.ma.count_masked(field))} fill), K")
print(f"min {field.min():.4f} max {field.max():.4f} mean {field.mean():.4f}")
"#;

#[test]
fn one_time_step_of_a_netcdf_variable_reads_as_netcdf4_reads_it() {
    let Some(python) = interop::python("one_time_step_of_a_netcdf_variable") else {
        return;
    };
    let path = tmp("era5.nc");
    let want = interop::run_python(&python, NETCDF, &[path.to_str().unwrap()]);
    let mut cmd = example("netcdf_time_step");
    cmd.arg(&path).arg("t2m").arg("1");
    assert_eq!(run(cmd), want);
    // The last step, counted from the end, is the same one.
    let mut cmd = example("netcdf_time_step");
    cmd.arg(&path).arg("t2m").arg("-1");
    assert_eq!(run(cmd), want.replace("t2m[1]", "t2m[-1]"));
}

#[test]
fn the_watcher_follows_a_swmr_writer_to_its_last_flush() {
    let path = tmp("watched.h5");
    let f = File::create_with(
        &path,
        FileOptions {
            swmr_write: true,
            ..FileOptions::default()
        },
    )
    .unwrap();
    let d = f
        .new_dataset::<f32>()
        .shape(&[0])
        .max_shape(&[None])
        .chunk(&[64])
        .create("reading")
        .unwrap();
    f.start_swmr_write().unwrap();
    d.append(&[0.5f32; 10]).unwrap();
    f.flush().unwrap();
    let mut watch = example("swmr_watch");
    watch
        .arg(&path)
        .arg("reading")
        .arg("400")
        .arg("0.01")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = watch.spawn().unwrap();
    for k in 1..=20 {
        d.append(&[k as f32; 25]).unwrap();
        f.flush().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let errors = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}{errors}");
    // Everything flushed was seen, the last value last.
    assert!(text.contains("reading: 510 elements seen"), "{text}");
    assert!(
        text.contains("..510 (") && text.contains("last 20)"),
        "{text}"
    );
    f.close().unwrap();
}
