//! Polling readers (`poll`): bytes and reads per refresh and flush-to-visible latency, for
//! h5chunk and h5py.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use h5chunk::{File, OpenOptions};

use crate::common::{dims_text, parse_dims, proc_io, wall_us};

/// The h5chunk polling reader of the benchmark (`poll` command): refresh, look at the extent,
/// read the newest element, as fast as it can until the writer is done. Prints
/// `SEEN DIMS MICROSECONDS` when an extent first shows and
/// `RESULT polls=.. bytes=.. reads=..` (bytes and read calls of the whole loop, from
/// `/proc/self/io`, the done file's reads aside).
pub(crate) fn poll_main(args: &[String]) -> Result<(), String> {
    let [file, done] = args else {
        return Err("poll FILE DONE".into());
    };
    let f = File::open_with(file, OpenOptions::swmr_read()).map_err(|e| format!("open: {e}"))?;
    let d = f.dataset("x").map_err(|e| format!("dataset: {e}"))?;
    println!("ready");
    std::io::stdout().flush().ok();
    let done = Path::new(done);
    let (mut polls, mut last, mut seen) = (0u64, Vec::new(), Vec::new());
    let mut final_dims: Option<Vec<u64>> = None;
    // Counted from the first poll that finds data, so that polls before the writer starts do
    // not dilute the figures.
    let (mut b0, mut r0) = (0u64, 0u64);
    let mut counting = false;
    let mut aside = (0u64, 0u64);
    loop {
        if !counting {
            (b0, r0) = proc_io();
        }
        if final_dims.is_none() && done.exists() {
            let (b, r) = proc_io();
            final_dims = std::fs::read_to_string(done)
                .ok()
                .and_then(|s| parse_dims(&s));
            let (b2, r2) = proc_io();
            aside = (aside.0 + b2 - b, aside.1 + r2 - r);
        }
        d.refresh().map_err(|e| format!("refresh: {e}"))?;
        let shape = d.shape();
        if shape.iter().all(|&x| x > 0) {
            counting = true;
        }
        if counting {
            polls += 1;
        }
        if shape != last {
            seen.push((dims_text(&shape), wall_us()));
            last = shape.clone();
        }
        if shape.iter().all(|&x| x > 0) {
            let start: Vec<u64> = shape.iter().map(|&x| x - 1).collect();
            let one = vec![1; shape.len()];
            d.read_slice::<i64>(&start, &one, None)
                .map_err(|e| format!("read: {e}"))?;
        }
        if final_dims.as_ref().is_some_and(|fd| *fd == shape) {
            break;
        }
        std::thread::sleep(Duration::from_micros(100));
    }
    let (b1, r1) = proc_io();
    for (dims, t) in &seen {
        println!("SEEN {dims}\t{t}");
    }
    println!(
        "RESULT polls={polls} bytes={} reads={}",
        b1 - b0 - aside.0,
        r1 - r0 - aside.1
    );
    Ok(())
}

/// The h5py polling reader: `poll_main` through libhdf5.
pub(crate) const H5PY_POLL: &str = r#"
import sys, time, os
import h5py
path, done = sys.argv[1:3]
def io():
    t = open('/proc/self/io').read().split('\n')
    g = lambda k: int([l for l in t if l.startswith(k)][0].split()[1])
    return g('rchar:'), g('syscr:')
f = h5py.File(path, 'r', swmr=True)
d = f['x']
print('ready', flush=True)
polls, last, seen, final = 0, None, [], None
counting = False
aside = [0, 0]
while True:
    if not counting:
        b0, r0 = io()
    if final is None and os.path.exists(done):
        b, r = io()
        with open(done) as fh:
            final = [int(x) for x in fh.read().split()]
        b2, r2 = io()
        aside[0] += b2 - b
        aside[1] += r2 - r
    d.refresh()
    shape = list(d.shape)
    if all(x > 0 for x in shape):
        counting = True
    if counting:
        polls += 1
    if shape != last:
        seen.append((' '.join(str(x) for x in shape), int(time.time() * 1e6)))
        last = shape
    if all(x > 0 for x in shape):
        d[tuple(slice(x - 1, x) for x in shape)]
    if final is not None and final == shape:
        break
    time.sleep(0.0001)
b1, r1 = io()
for dims, t in seen:
    print(f'SEEN {dims}\t{t}')
print(f'RESULT polls={polls} bytes={b1 - b0 - aside[0]} reads={r1 - r0 - aside[1]}', flush=True)
"#;

/// What one polling reader reports.
#[derive(Debug, Default)]
pub(crate) struct PollReport {
    pub(crate) polls: u64,
    pub(crate) bytes: u64,
    pub(crate) reads: u64,
    /// Microseconds from the start of the flush that made each extent to its first sight.
    pub(crate) latencies: Vec<u64>,
}

/// Parse a poller's output against the writer's flush log.
pub(crate) fn poll_report(
    text: &str,
    flushes: &std::collections::HashMap<String, u64>,
) -> PollReport {
    let mut r = PollReport::default();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("SEEN ") {
            if let Some((dims, t)) = rest.split_once('\t')
                && let (Some(&start), Ok(t)) = (flushes.get(dims), t.parse::<u64>())
            {
                r.latencies.push(t.saturating_sub(start));
            }
        } else if let Some(rest) = line.strip_prefix("RESULT ") {
            for kv in rest.split_whitespace() {
                match kv.split_once('=') {
                    Some(("polls", v)) => r.polls = v.parse().unwrap_or(0),
                    Some(("bytes", v)) => r.bytes = v.parse().unwrap_or(0),
                    Some(("reads", v)) => r.reads = v.parse().unwrap_or(0),
                    _ => {}
                }
            }
        }
    }
    r
}
