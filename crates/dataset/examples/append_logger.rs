//! A growing log: append timestamped readings to an HDF5 file, flushing after each batch so
//! that h5py, `h5dump` or a crash at any moment sees every completed batch. The file says what
//! it holds in attributes, as h5py users write them: the file's own (`f.attrs["title"]`), and
//! each dataset's units.
//!
//! ```text
//! cargo run --example append_logger                 # a log in the system's temp directory
//! cargo run --example append_logger -- my.h5 5000   # 5,000 more records into my.h5
//! python3 -c "import h5py; f = h5py.File('my.h5'); print(dict(f.attrs), f['time'][-3:], f['reading'][-3:])"
//! ```
//!
//! The same in h5py:
//!
//! ```python
//! f = h5py.File(path, "a")
//! if "time" not in f:
//!     f.attrs["title"] = "thermocouple log"
//!     t = f.create_dataset("time", (0,), "f8", maxshape=(None,), chunks=(4096,), shuffle=True, compression="gzip", compression_opts=4)
//!     t.attrs["units"] = "s since 1970-01-01"
//!     ...
//! t.resize((n + len(batch),)); t[n:] = batch; f.flush()
//! ```
//!
//! Run it twice: the second run reopens the file and appends after the first run's records.

use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use h5chunk::{Dataset, File, FilterSpec};

/// Records per batch: one `flush` each.
const BATCH: usize = 1_000;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args
        .next()
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("h5chunk-append-logger.h5"));
    let records: usize = match args.next() {
        Some(n) => n.parse()?,
        None => 10_000,
    };

    // Reopen the log if it exists, else create it with two growing 1-D datasets.
    let (file, time, reading) = if path.exists() {
        let file = File::open_rw(&path)?;
        let time = file.dataset("time")?;
        let reading = file.dataset("reading")?;
        (file, time, reading)
    } else {
        let file = File::create(&path)?;
        // What the file holds, for whoever opens it (h5py: `f.attrs["title"] = ...`).
        file.attrs().set_str("title", "thermocouple log")?;
        file.attrs().set_scalar("sensor_id", 7u32)?;
        let time = growing::<f64>(&file, "time")?;
        time.attrs().set_str("units", "s since 1970-01-01")?;
        let reading = growing::<f32>(&file, "reading")?;
        reading.attrs().set_str("units", "degC")?;
        (file, time, reading)
    };
    println!(
        "{}: {}, units {} and {}",
        path.display(),
        file.attr("title")?.string()?,
        time.attr("units")?.string()?,
        reading.attr("units")?.string()?
    );
    let before = time.shape().first().copied().unwrap_or(0);

    let mut written = 0;
    while written < records {
        let n = BATCH.min(records.saturating_sub(written));
        let mut t = Vec::with_capacity(n);
        let mut r = Vec::with_capacity(n);
        for i in 0..n {
            let now = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs_f64();
            let k = before as f64 + written as f64 + i as f64;
            t.push(now);
            r.push((k * 0.01).sin() as f32 * 10.0 + 20.0);
        }
        time.append(&t)?;
        reading.append(&r)?;
        // After this, the batch is on disk and every reader of the file sees it.
        file.flush()?;
        written = written.saturating_add(n);
    }

    let after = time.shape().first().copied().unwrap_or(0);
    println!(
        "{}: {before} records before, {after} now ({} index)",
        path.display(),
        time.index_kind().map_or("no", |k| k.name())
    );
    // h5py's reading[-3:], as f64 (stored as float32, converted on read as h5py converts).
    let last: Vec<f64> = reading.select(-3..)?.read()?;
    println!("last readings: {last:?}");
    file.close()?;
    Ok(())
}

/// A 1-D dataset of `T` that starts empty and grows without limit, in chunks of 4,096 values,
/// shuffled and deflated (h5py: `maxshape=(None,), chunks=(4096,), shuffle=True,
/// compression="gzip", compression_opts=4`).
fn growing<T: h5chunk::H5Type>(file: &File, name: &str) -> h5chunk::Result<Dataset> {
    file.new_dataset::<T>()
        .shape(&[0])
        .max_shape(&[None])
        .chunk(&[4096])
        .filter(FilterSpec::Shuffle)
        .filter(FilterSpec::Deflate(4))
        .create(name)
}
