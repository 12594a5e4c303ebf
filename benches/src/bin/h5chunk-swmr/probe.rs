//! A reader opened at a random instant (`probe`): started ahead of time, it waits for a line
//! on stdin (`go` and the extent of the writer's last completed flush), then opens the file
//! once as a SWMR reader (no retry: a failed open is a failure), checks every element of the
//! extent it sees, refreshes a few times checking what each refresh shows, and exits.
//!
//! It prints one line: `RESULT opened=0|1 open_start=US open_end=US refreshes=R checked=N
//! wrong=W torn=T errors=E` (wall-clock microseconds, so the soak can tell which opens fell inside a
//! flush).

use std::io::BufRead;
use std::path::PathBuf;
use std::time::Duration;

use h5chunk::{Dataset, File, OpenOptions};

use crate::common::{parse_dims, wall_us};
use crate::scenario::{FILL, Grow, Scenario, for_each_coord, is_torn, new_boxes, oracle, scenario};

/// What one probe reports.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ProbeReport {
    pub(crate) opened: bool,
    pub(crate) open_start: u64,
    pub(crate) open_end: u64,
    pub(crate) refreshes: u64,
    pub(crate) checked: u64,
    pub(crate) wrong: u64,
    /// Elements seen half-written (see [`is_torn`]): a libhdf5 writer's doing.
    pub(crate) torn: u64,
    pub(crate) errors: u64,
}

impl ProbeReport {
    pub(crate) fn parse(line: &str) -> Option<ProbeReport> {
        let rest = line.strip_prefix("RESULT ")?;
        let mut r = ProbeReport::default();
        for kv in rest.split_whitespace() {
            let (k, v) = kv.split_once('=')?;
            match k {
                "opened" => r.opened = v == "1",
                "open_start" => r.open_start = v.parse().ok()?,
                "open_end" => r.open_end = v.parse().ok()?,
                "refreshes" => r.refreshes = v.parse().ok()?,
                "checked" => r.checked = v.parse().ok()?,
                "wrong" => r.wrong = v.parse().ok()?,
                "torn" => r.torn = v.parse().ok()?,
                "errors" => r.errors = v.parse().ok()?,
                _ => {}
            }
        }
        Some(r)
    }
}

/// What a probe checks against: the scenario, the writer's announced bound, and the extent
/// of the last flush completed before the probe was told to open.
struct Check<'a> {
    sc: &'a Scenario,
    bound: &'a std::path::Path,
    at_least: Option<Vec<u64>>,
}

impl Check<'_> {
    fn announced(&self) -> Option<Vec<u64>> {
        std::fs::read_to_string(self.bound)
            .ok()
            .and_then(|s| parse_dims(&s))
    }

    /// Every element of the box `start`/`count`: its value (`exact`), or its value or the
    /// fill value. Returns the number of leading rows (dimension 0) wholly written.
    fn boxes(
        &self,
        d: &Dataset,
        start: &[u64],
        count: &[u64],
        exact: bool,
        rep: &mut ProbeReport,
    ) -> u64 {
        if count.contains(&0) {
            return 0;
        }
        let v = match d.read_slice::<i64>(start, count, None) {
            Ok(v) => v,
            Err(e) => {
                rep.errors += 1;
                eprintln!("h5chunk probe: read {start:?}+{count:?}: {e}");
                return 0;
            }
        };
        rep.checked += v.len() as u64;
        let row_len: u64 = count.iter().skip(1).product();
        let mut i = 0usize;
        let (mut full_rows, mut row_ok, mut in_row, mut prefix_open) = (0u64, true, 0u64, true);
        for_each_coord(start, count, |c| {
            let want = oracle(c);
            let got = v.get(i).copied().unwrap_or(FILL);
            if got != want {
                row_ok = false;
                if !exact && got == FILL {
                    // Not written yet.
                } else if !exact && is_torn(got, FILL, want) {
                    rep.torn += 1;
                } else {
                    if rep.wrong < 5 {
                        eprintln!("h5chunk probe: {c:?} holds {got}, not {want}");
                    }
                    rep.wrong += 1;
                }
            }
            i += 1;
            in_row += 1;
            if in_row == row_len {
                if prefix_open && row_ok {
                    full_rows += 1;
                } else {
                    prefix_open = false;
                }
                in_row = 0;
                row_ok = true;
            }
        });
        full_rows
    }

    /// The first view, right after the open: the whole extent.
    fn first(&self, d: &Dataset, rep: &mut ProbeReport) -> Vec<u64> {
        let shape = d.shape();
        let zero = vec![0; shape.len()];
        match self.sc.grow {
            g if g.loose() => {
                self.boxes(d, &zero, &shape, false, rep);
            }
            Grow::Fill => {
                if shape != self.sc.initial {
                    rep.wrong += 1;
                    eprintln!(
                        "h5chunk probe: fixed extent {shape:?}, not {:?}",
                        self.sc.initial
                    );
                    return shape;
                }
                let rows = self.boxes(d, &zero, &shape, false, rep);
                // Read after the data: the rows read whole were written by then.
                if let Some(b) = self.announced()
                    && rows > b.first().copied().unwrap_or(0)
                {
                    rep.wrong += 1;
                    eprintln!("h5chunk probe: {rows} rows written, {b:?} announced");
                }
                if let Some(l) = &self.at_least
                    && rows < l.first().copied().unwrap_or(0)
                {
                    rep.wrong += 1;
                    eprintln!("h5chunk probe: {rows} rows written, {l:?} flushed before the open");
                }
            }
            _ => {
                self.grown(&shape, rep);
                self.boxes(d, &zero, &shape, true, rep);
            }
        }
        shape
    }

    /// The extent of a growing scenario: within what the writer announced, and (this probe
    /// opened after that flush completed) at least what it had flushed.
    fn grown(&self, shape: &[u64], rep: &mut ProbeReport) {
        if let Some(b) = self.announced()
            && shape.iter().zip(&b).any(|(s, b)| s > b)
        {
            rep.wrong += 1;
            eprintln!("h5chunk probe: extent {shape:?} past the announced {b:?}");
        }
        if let Some(l) = &self.at_least
            && shape.iter().zip(l).any(|(s, l)| s < l)
        {
            rep.wrong += 1;
            eprintln!("h5chunk probe: extent {shape:?} short of the flushed {l:?}");
        }
    }

    /// A view after a refresh: what is new in a growing extent (which never shrinks), a
    /// window of the others.
    fn next(&self, d: &Dataset, seen: &[u64], rep: &mut ProbeReport, turn: u64) -> Vec<u64> {
        let shape = d.shape();
        match self.sc.grow {
            g if g.loose() || g == Grow::Fill => {
                let len = shape.first().copied().unwrap_or(0);
                let window = 4096u64.min(len);
                let at = turn.wrapping_mul(2_654_435_761) % (len - window + 1);
                let mut start = vec![0; shape.len()];
                let mut count = shape.clone();
                start[0] = at;
                count[0] = window;
                self.boxes(d, &start, &count, false, rep);
            }
            _ => {
                if shape.iter().zip(seen).any(|(s, o)| s < o) {
                    rep.wrong += 1;
                    eprintln!("h5chunk probe: extent shrank from {seen:?} to {shape:?}");
                }
                self.grown(&shape, rep);
                let old: Vec<u64> = seen.iter().zip(&shape).map(|(&o, &s)| o.min(s)).collect();
                for (start, count) in new_boxes(&old, &shape) {
                    self.boxes(d, &start, &count, true, rep);
                }
            }
        }
        shape
    }
}

/// `probe --file F --scenario S --n N --chunk-elems E --bound B [--refreshes R] [--seed S]`.
pub(crate) fn probe_main(args: &[String]) -> Result<(), String> {
    let mut file = None;
    let (mut name, mut n, mut chunk_elems) = (String::new(), 0u64, 1u64);
    let (mut bound, mut refreshes, mut seed) = (None, 3u64, 1u64);
    let mut it = args.iter();
    while let Some(k) = it.next() {
        let v = it.next().ok_or_else(|| format!("{k} needs a value"))?;
        let num = |s: &str| s.parse::<u64>().map_err(|e| format!("{k}: {e}"));
        match k.as_str() {
            "--file" => file = Some(PathBuf::from(v)),
            "--scenario" => name = v.clone(),
            "--n" => n = num(v)?,
            "--chunk-elems" => chunk_elems = num(v)?,
            "--bound" => bound = Some(PathBuf::from(v)),
            "--refreshes" => refreshes = num(v)?,
            "--seed" => seed = num(v)?,
            other => return Err(format!("unknown argument {other}")),
        }
    }
    let (Some(file), Some(bound)) = (file, bound) else {
        return Err("probe needs --file and --bound".into());
    };
    let sc = scenario(&name, n, chunk_elems)?;
    // Armed: wait for the instant to open.
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .map_err(|e| format!("stdin: {e}"))?;
    let Some(rest) = line.trim_end().strip_prefix("go") else {
        // The soak ended without firing this probe.
        return Ok(());
    };
    let at_least = parse_dims(rest).filter(|d| !d.is_empty());
    let check = Check {
        sc: &sc,
        bound: &bound,
        at_least,
    };
    let mut rep = ProbeReport {
        open_start: wall_us(),
        ..ProbeReport::default()
    };
    let opened = File::open_with(&file, OpenOptions::swmr_read())
        .and_then(|f| f.dataset("x").map(|d| (f, d)));
    rep.open_end = wall_us();
    match opened {
        Err(e) => eprintln!("h5chunk probe: open {}: {e}", file.display()),
        Ok((f, d)) => {
            rep.opened = true;
            let mut seen = check.first(&d, &mut rep);
            let mut rng = h5chunk_benches::SplitMix(seed);
            for turn in 0..refreshes {
                std::thread::sleep(Duration::from_micros(rng.next_u64() % 2000));
                if let Err(e) = d.refresh() {
                    rep.errors += 1;
                    eprintln!("h5chunk probe: refresh: {e}");
                    continue;
                }
                rep.refreshes += 1;
                seen = check.next(&d, &seen, &mut rep, turn + 1);
            }
            drop(d);
            if let Err(e) = f.close() {
                rep.errors += 1;
                eprintln!("h5chunk probe: close: {e}");
            }
        }
    }
    println!(
        "RESULT opened={} open_start={} open_end={} refreshes={} checked={} wrong={} torn={} \
         errors={}",
        u8::from(rep.opened),
        rep.open_start,
        rep.open_end,
        rep.refreshes,
        rep.checked,
        rep.wrong,
        rep.torn,
        rep.errors
    );
    Ok(())
}
