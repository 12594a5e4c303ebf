//! A reader process (h5chunk's `read` command, and the h5py reader's script): follows the
//! writer and checks every element it sees.

use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use h5chunk::{File, OpenOptions};

use crate::common::parse_dims;
use crate::scenario::{FILL, Grow, for_each_coord, is_torn, new_boxes, oracle, scenario};

/// What one reader process reports.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ReaderReport {
    pub(crate) refreshes: u64,
    pub(crate) checked: u64,
    pub(crate) wrong: u64,
    /// Elements seen half-written (see [`is_torn`]).
    pub(crate) torn: u64,
    pub(crate) errors: u64,
    /// Metadata reads retried after a checksum failure (`None`: h5py does not say).
    pub(crate) retries: Option<u64>,
}

impl ReaderReport {
    pub(crate) fn parse(line: &str) -> Option<ReaderReport> {
        let rest = line.strip_prefix("RESULT ")?;
        let mut r = ReaderReport::default();
        for kv in rest.split_whitespace() {
            let (k, v) = kv.split_once('=')?;
            match k {
                "refreshes" => r.refreshes = v.parse().ok()?,
                "checked" => r.checked = v.parse().ok()?,
                "wrong" => r.wrong = v.parse().ok()?,
                "torn" => r.torn = v.parse().ok()?,
                "errors" => r.errors = v.parse().ok()?,
                "retries" => r.retries = v.parse().ok(),
                _ => {}
            }
        }
        Some(r)
    }
}

/// The h5chunk reader (`read` command): follow the dataset until the writer is done.
pub(crate) fn read_main(args: &[String]) -> Result<(), String> {
    let mut file = None;
    let (mut name, mut n, mut chunk_elems) = (String::new(), 0u64, 1u64);
    let (mut done, mut bound) = (None, None);
    let mut it = args.iter();
    while let Some(k) = it.next() {
        let v = it.next().ok_or_else(|| format!("{k} needs a value"))?;
        match k.as_str() {
            "--file" => file = Some(PathBuf::from(v)),
            "--scenario" => name = v.clone(),
            "--n" => n = v.parse().map_err(|e| format!("--n: {e}"))?,
            "--chunk-elems" => {
                chunk_elems = v.parse().map_err(|e| format!("--chunk-elems: {e}"))?
            }
            "--done" => done = Some(PathBuf::from(v)),
            "--bound" => bound = Some(PathBuf::from(v)),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    let (file, done, bound) = match (file, done, bound) {
        (Some(f), Some(d), Some(b)) => (f, d, b),
        _ => return Err("read needs --file, --done and --bound".into()),
    };
    let sc = scenario(&name, n, chunk_elems)?;
    let opened = Instant::now();
    let f = loop {
        match File::open_with(&file, OpenOptions::swmr_read()) {
            Ok(f) => break f,
            Err(e) if opened.elapsed() < Duration::from_secs(60) => {
                let _ = e;
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => return Err(format!("open: {e}")),
        }
    };
    let d = f.dataset("x").map_err(|e| format!("dataset: {e}"))?;
    println!("ready");
    std::io::stdout().flush().ok();
    let mut rep = ReaderReport::default();
    let mut seen: Vec<u64> = vec![0; sc.initial.len()];
    let mut prefix = 0u64; // Fill: rows known written
    let rows = sc.initial[0];
    let mut finishing = 0u32;
    loop {
        let final_dims = std::fs::read_to_string(&done)
            .ok()
            .and_then(|s| parse_dims(&s));
        if let Err(e) = d.refresh() {
            rep.errors += 1;
            eprintln!("h5chunk reader: refresh: {e}");
            if rep.errors > 20 {
                break;
            }
            continue;
        }
        rep.refreshes += 1;
        let shape = d.shape();
        let announced = std::fs::read_to_string(&bound)
            .ok()
            .and_then(|s| parse_dims(&s));
        if sc.grow.loose() {
            // A window at a place that moves with each refresh: every element its value or
            // the fill value (a shrink may have dropped what an older view still shows; a
            // sparse writer leaves holes).
            let len = shape.first().copied().unwrap_or(0);
            let window = 4096.min(len);
            if window > 0 {
                let at = rep.refreshes.wrapping_mul(2_654_435_761) % (len - window + 1);
                match d.read_slice::<i64>(&[at], &[window], None) {
                    Ok(v) => {
                        rep.checked += v.len() as u64;
                        for (i, &x) in (at..).zip(&v) {
                            let want = oracle(&[i]);
                            if x != FILL && x != want {
                                if is_torn(x, FILL, want) {
                                    rep.torn += 1;
                                } else {
                                    rep.wrong += 1;
                                }
                                if rep.wrong + rep.torn < 5 {
                                    eprintln!("h5chunk reader: [{i}] holds {x}");
                                }
                            }
                        }
                    }
                    Err(e) => {
                        rep.errors += 1;
                        eprintln!("h5chunk reader: read: {e}");
                    }
                }
            }
            if final_dims.as_deref() == Some(&shape[..]) {
                break;
            }
        } else if sc.grow == Grow::Fill {
            if shape != sc.initial {
                rep.wrong += 1;
                eprintln!(
                    "h5chunk reader: fixed extent {shape:?} is not {:?}",
                    sc.initial
                );
                break;
            }
            // A window of rows past the known prefix: written rows, then fill rows only.
            let window = (4096 / 8).min(rows - prefix);
            if window > 0 {
                match d.read_slice::<i64>(&[prefix, 0], &[window, 8], None) {
                    Ok(v) => {
                        rep.checked += v.len() as u64;
                        let mut i = 0usize;
                        for_each_coord(&[prefix, 0], &[window, 8], |c| {
                            let want = oracle(c);
                            if v[i] != FILL && v[i] != want {
                                if is_torn(v[i], FILL, want) {
                                    rep.torn += 1;
                                } else {
                                    rep.wrong += 1;
                                }
                                if rep.wrong + rep.torn < 5 {
                                    eprintln!("h5chunk reader: {c:?} holds {}", v[i]);
                                }
                            }
                            i += 1;
                        });
                        let mut q = 0u64;
                        while q < window
                            && (0..8).all(|c| v[(q * 8 + c) as usize] == oracle(&[prefix + q, c]))
                        {
                            q += 1;
                        }
                        prefix += q;
                        // Read after the data: what was read was written by then.
                        let announced = std::fs::read_to_string(&bound)
                            .ok()
                            .and_then(|s| parse_dims(&s));
                        if let Some(b) = &announced
                            && prefix > b[0]
                        {
                            rep.wrong += 1;
                            eprintln!("h5chunk reader: {prefix} rows seen, {} announced", b[0]);
                        }
                    }
                    Err(e) => {
                        rep.errors += 1;
                        eprintln!("h5chunk reader: read: {e}");
                    }
                }
            }
            if let Some(fd) = &final_dims
                && prefix >= fd[0]
            {
                break;
            }
        } else {
            if shape.iter().zip(&seen).any(|(s, o)| s < o) {
                rep.wrong += 1;
                eprintln!("h5chunk reader: extent shrank from {seen:?} to {shape:?}");
            }
            if let Some(b) = &announced
                && shape.iter().zip(b).any(|(s, b)| s > b)
            {
                rep.wrong += 1;
                eprintln!("h5chunk reader: extent {shape:?} past the announced {b:?}");
            }
            let old: Vec<u64> = seen.iter().zip(&shape).map(|(&o, &s)| o.min(s)).collect();
            for (start, count) in new_boxes(&old, &shape) {
                match d.read_slice::<i64>(&start, &count, None) {
                    Ok(v) => {
                        let mut i = 0usize;
                        for_each_coord(&start, &count, |c| {
                            if v[i] != oracle(c) {
                                if rep.wrong < 5 {
                                    eprintln!(
                                        "h5chunk reader: {c:?} holds {}, not {}",
                                        v[i],
                                        oracle(c)
                                    );
                                }
                                rep.wrong += 1;
                            }
                            i += 1;
                        });
                        rep.checked += v.len() as u64;
                    }
                    Err(e) => {
                        rep.errors += 1;
                        eprintln!("h5chunk reader: read {start:?}+{count:?}: {e}");
                    }
                }
            }
            seen = shape.clone();
            if let Some(fd) = &final_dims
                && shape.len() == fd.len()
                && shape.iter().zip(fd).all(|(s, f)| s >= f)
            {
                break;
            }
        }
        if final_dims.is_some() {
            // The writer is done: its last flush must show within a few refreshes.
            finishing += 1;
            if finishing > 1000 {
                rep.errors += 1;
                eprintln!("h5chunk reader: the final extent never showed (at {seen:?})");
                break;
            }
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    let retries = f.cache_stats().total().retries;
    println!(
        "RESULT refreshes={} checked={} wrong={} torn={} errors={} retries={retries}",
        rep.refreshes, rep.checked, rep.wrong, rep.torn, rep.errors
    );
    Ok(())
}

/// The h5py reader: the same checks as `read_main`, through libhdf5.
pub(crate) const H5PY_READER: &str = r#"
import sys, time, os
import h5py, numpy as np
path, scen, done_path, bound_path = sys.argv[1:5]
FILL = -1
def oracle(start, count):
    g = np.meshgrid(*[np.arange(s, s + c, dtype=np.int64) for s, c in zip(start, count)],
                    indexing='ij')
    if len(g) == 1:
        return g[0] * 1000003
    if len(g) == 2:
        return g[0] * 1000003 + g[1]
    return g[0] * 1000003 + g[1] * 1009 + g[2]
def dims(p):
    try:
        with open(p) as fh:
            return [int(x) for x in fh.read().split()]
    except (FileNotFoundError, ValueError):
        return None
t0 = time.time()
while True:
    try:
        f = h5py.File(path, 'r', swmr=True)
        break
    except OSError:
        if time.time() - t0 > 60:
            raise
        time.sleep(0.005)
d = f['x']
print('ready', flush=True)
refreshes = checked = wrong = errors = torn = 0
rank = len(d.shape)
seen = [0] * rank
prefix = 0
finishing = 0
while True:
    final = dims(done_path)
    try:
        d.refresh()
    except Exception as e:
        errors += 1
        print('h5py reader: refresh:', e, file=sys.stderr)
        if errors > 20:
            break
        continue
    refreshes += 1
    shape = list(d.shape)
    bound = dims(bound_path)
    if scen == 'farray':
        rows = shape[0]
        window = min(4096 // 8, rows - prefix)
        if window > 0:
            try:
                v = d[prefix:prefix + window, :]
                checked += v.size
                exp = oracle([prefix, 0], [window, 8])
                odd = (v != exp) & (v != FILL)
                if odd.any():
                    gb = v[odd].astype('<i8').view(np.uint8).reshape(-1, 8)
                    eb = exp[odd].astype('<i8').view(np.uint8).reshape(-1, 8)
                    mixed = np.all((gb == eb) | (gb == 0xff), axis=1)
                    torn += int(np.count_nonzero(mixed))
                    wrong += int(np.count_nonzero(~mixed))
                    print('h5py reader:', int(odd.sum()), 'values neither written nor fill', file=sys.stderr)
                good = np.all(v == exp, axis=1)
                q = int(np.argmin(good)) if not good.all() else window
                prefix += q
                bound = dims(bound_path)  # after the data: what was read was written by then
                if bound is not None and prefix > bound[0]:
                    wrong += 1
                    print('h5py reader:', prefix, 'rows seen,', bound[0], 'announced', file=sys.stderr)
            except Exception as e:
                errors += 1
                print('h5py reader: read:', e, file=sys.stderr)
        if final is not None and prefix >= final[0]:
            break
    else:
        if any(s < o for s, o in zip(shape, seen)):
            wrong += 1
            print('h5py reader: extent shrank', seen, shape, file=sys.stderr)
        if bound is not None and any(s > b for s, b in zip(shape, bound)):
            wrong += 1
            print('h5py reader: extent', shape, 'past the announced', bound, file=sys.stderr)
        old = [min(o, s) for o, s in zip(seen, shape)]
        for k in range(rank):
            if shape[k] <= old[k]:
                continue
            start = [0] * rank
            count = list(shape)
            for j in range(k):
                count[j] = old[j]
            start[k] = old[k]
            count[k] = shape[k] - old[k]
            if min(count) == 0:
                continue
            try:
                v = d[tuple(slice(s, s + c) for s, c in zip(start, count))]
                checked += v.size
                bad = int(np.count_nonzero(v != oracle(start, count)))
                if bad:
                    wrong += bad
                    print('h5py reader:', bad, 'wrong values in', start, count, file=sys.stderr)
            except Exception as e:
                errors += 1
                print('h5py reader: read:', e, file=sys.stderr)
        seen = shape
        if final is not None and len(final) == len(shape) and all(s >= x for s, x in zip(shape, final)):
            break
    if final is not None:
        finishing += 1
        if finishing > 1000:
            errors += 1
            print('h5py reader: the final extent never showed', seen, file=sys.stderr)
            break
    time.sleep(0.0002)
f.close()
print(f'RESULT refreshes={refreshes} checked={checked} wrong={wrong} torn={torn} errors={errors}', flush=True)
"#;
