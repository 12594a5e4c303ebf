//! Watch a dataset another process is appending to (single writer, many readers): open the
//! file as a SWMR reader, and at every poll refresh the dataset and print what is new since
//! the last one. Stops after `POLLS` polls, or after `QUIET` polls in a row without news.
//!
//! ```text
//! cargo run --example swmr_watch -- log.h5 reading           # while a SWMR writer appends
//! cargo run --example swmr_watch -- log.h5 reading 200 0.05  # 200 polls, 50 ms apart
//! ```
//!
//! The same in h5py:
//!
//! ```python
//! f = h5py.File("log.h5", "r", swmr=True)
//! d = f["reading"]; seen = 0
//! while True:
//!     d.refresh(); n = d.shape[0]
//!     if n > seen: print(seen, n, d[seen:n]); seen = n
//!     time.sleep(0.1)
//! ```

use std::time::Duration;

use h5chunk::{File, OpenOptions};

/// Polls in a row without anything new after which the watch ends.
const QUIET: u32 = 50;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(path), Some(name)) = (args.next(), args.next()) else {
        return Err("usage: swmr_watch FILE DATASET [POLLS] [SECONDS]".into());
    };
    let polls: u32 = args.next().map_or(Ok(u32::MAX), |s| s.parse())?;
    let every = Duration::from_secs_f64(args.next().map_or(Ok(0.1), |s| s.parse())?);

    // h5py's `h5py.File(path, "r", swmr=True)`.
    let file = File::open_with(&path, OpenOptions::swmr_read())?;
    let d = file.dataset(&name)?;
    let mut seen = 0u64;
    let mut quiet = 0u32;
    for _ in 0..polls {
        // What the writer has flushed since the last poll.
        d.refresh()?;
        let n = d.shape().first().copied().unwrap_or(0);
        if n > seen {
            let new: Vec<f64> = d.select(seen..n)?.read()?;
            let last = new.last().copied().unwrap_or(f64::NAN);
            println!("{name}: {seen}..{n} ({} new, last {last})", new.len());
            seen = n;
            quiet = 0;
        } else {
            quiet = quiet.saturating_add(1);
            if quiet >= QUIET {
                break;
            }
        }
        std::thread::sleep(every);
    }
    println!("{name}: {seen} elements seen");
    Ok(())
}
