//! `cargo xtask bench --instructions`: exact instruction counts per append and per lookup,
//! h5chunk and libhdf5 side by side, from callgrind.
//!
//! Both bench programs put the append phase (n appends, then the file's close) and the warm
//! lookup phase (one element of each of k random chunks, on an open handle) in functions named
//! `bench_append_phase` and `bench_lookup_phase`. Each (scenario, index, implementation) runs
//! twice under `valgrind --tool=callgrind --toggle-collect=*bench_<phase>_phase*`, stopping
//! after that phase; callgrind's `Collected` total is then exactly the instructions executed
//! inside the phase (callees included), divided by n or k. Counts are repeatable to the
//! instruction for the same binaries and inputs, whatever else the machine does.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

use crate::harness::{IMPLS, parse_line};

/// Appends per run by default under callgrind (about 50 times slower than natively).
pub const DEFAULT_N: u64 = 10_000;

/// One phase's count: instructions in the phase and the operations it made.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Count {
    pub instructions: u64,
    pub ops: u64,
}

impl Count {
    pub fn per_op(self) -> f64 {
        self.instructions as f64 / self.ops.max(1) as f64
    }
}

/// Counts by (scenario, index, implementation, phase), or why there is none.
pub type Counts = BTreeMap<(String, String, String, &'static str), Result<Count, String>>;

/// callgrind's total of collected events, from its stderr.
pub fn collected(stderr: &str) -> Option<u64> {
    stderr.lines().find_map(|l| {
        let (_, rest) = l.split_once("Collected :")?;
        rest.trim().replace(',', "").parse().ok()
    })
}

/// Run `program args` under callgrind counting only inside `bench_<phase>_phase`.
fn count(
    program: &Path,
    args: &[String],
    phase: &'static str,
    n: u64,
    impl_name: &str,
) -> Result<Count, String> {
    let mut cmd = Command::new("valgrind");
    cmd.args([
        "--tool=callgrind",
        "--callgrind-out-file=/dev/null",
        &format!("--toggle-collect=*bench_{phase}_phase*"),
    ])
    .arg(program)
    .args(args);
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run valgrind: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let tag = if phase == "append" {
        "APPEND"
    } else {
        "LOOKUP"
    };
    let fields = stdout.lines().find_map(|l| match parse_line(l) {
        Some((t, f)) if t == tag => Some(f),
        _ => None,
    });
    let Some(fields) = fields else {
        let why = stdout
            .lines()
            .find_map(|l| l.strip_prefix("UNAVAILABLE "))
            .map(str::to_owned)
            .unwrap_or_else(|| format!("{impl_name} printed no {tag} line ({})", out.status));
        return Err(why);
    };
    let instructions = collected(&stderr).ok_or("callgrind reported no Collected total")?;
    let ops = if phase == "append" {
        n
    } else {
        fields
            .get("k")
            .and_then(|k| k.parse().ok())
            .ok_or("the LOOKUP line has no k")?
    };
    Ok(Count { instructions, ops })
}

/// Count every case on both sides.
pub fn run(
    cases: &[(String, String)],
    n: u64,
    chunk_bytes: u64,
    ours: &Path,
    theirs: &Result<std::path::PathBuf, String>,
    files: &Path,
) -> Counts {
    let mut counts = Counts::new();
    let total = cases.len() * IMPLS.len() * 2;
    let mut done = 0;
    for (scenario, index) in cases {
        for imp in IMPLS {
            for phase in ["append", "lookup"] {
                done += 1;
                eprintln!(
                    "xtask bench --instructions: {done}/{total} {scenario} {index} {imp} {phase}"
                );
                let key = (scenario.clone(), index.clone(), imp.to_string(), phase);
                let result = match (imp, theirs) {
                    ("h5chunk", _) => {
                        let args: Vec<String> = vec![
                            "--scenario".into(),
                            scenario.clone(),
                            "--index".into(),
                            index.clone(),
                            "--n".into(),
                            n.to_string(),
                            "--chunk-bytes".into(),
                            chunk_bytes.to_string(),
                            "--dir".into(),
                            files.display().to_string(),
                            "--stop-after".into(),
                            phase.into(),
                        ];
                        count(ours, &args, phase, n, imp)
                    }
                    (_, Ok(bin)) => {
                        let args: Vec<String> = vec![
                            scenario.clone(),
                            index.clone(),
                            n.to_string(),
                            chunk_bytes.to_string(),
                            files.display().to_string(),
                            phase.into(),
                        ];
                        count(bin, &args, phase, n, imp)
                    }
                    (_, Err(why)) => Err(format!("libhdf5 not available: {why}")),
                };
                counts.insert(key, result);
            }
        }
    }
    counts
}

fn cell(c: Option<&Result<Count, String>>) -> String {
    match c {
        Some(Ok(c)) => format!("{:.0}", c.per_op()),
        _ => "n/a".into(),
    }
}

fn ratio(a: Option<&Result<Count, String>>, b: Option<&Result<Count, String>>) -> String {
    match (a, b) {
        (Some(Ok(a)), Some(Ok(b))) if b.per_op() > 0.0 => {
            format!("{:.2}x", a.per_op() / b.per_op())
        }
        _ => "-".into(),
    }
}

/// The table: instructions per append and per lookup of both, and h5chunk / libhdf5.
pub fn table(cases: &[(String, String)], counts: &Counts, n: u64) -> String {
    let header = [
        "scenario",
        "index",
        "instr/append h5c",
        "instr/append hdf5",
        "ratio",
        "instr/lookup h5c",
        "instr/lookup hdf5",
        "ratio",
    ];
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut notes = Vec::new();
    for (s, i) in cases {
        let get = |imp: &str, phase: &'static str| {
            counts.get(&(s.clone(), i.clone(), imp.to_string(), phase))
        };
        rows.push(vec![
            s.clone(),
            i.clone(),
            cell(get("h5chunk", "append")),
            cell(get("libhdf5", "append")),
            ratio(get("h5chunk", "append"), get("libhdf5", "append")),
            cell(get("h5chunk", "lookup")),
            cell(get("libhdf5", "lookup")),
            ratio(get("h5chunk", "lookup"), get("libhdf5", "lookup")),
        ]);
        for imp in IMPLS {
            if let Some(Err(why)) = get(imp, "append") {
                notes.push(format!("  {s} {i} {imp}: {why}"));
            }
        }
    }
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in &rows {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.len());
        }
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "instructions (callgrind): per append over n={n} appends (close included), per warm \
         lookup; ratio = h5chunk / libhdf5"
    );
    let line = |cells: &[String]| {
        let mut l = String::new();
        for (k, (c, w)) in cells.iter().zip(&widths).enumerate() {
            if k < 2 {
                let _ = write!(l, "{c:<w$}  ");
            } else {
                let _ = write!(l, "{c:>w$}  ");
            }
        }
        l.trim_end().to_string()
    };
    let head: Vec<String> = header.iter().map(|h| h.to_string()).collect();
    let _ = writeln!(out, "{}", line(&head));
    let _ = writeln!(
        out,
        "{}",
        "-".repeat(widths.iter().sum::<usize>() + 2 * (widths.len() - 1))
    );
    for row in &rows {
        let _ = writeln!(out, "{}", line(row));
    }
    if !notes.is_empty() {
        let _ = writeln!(out, "unavailable:");
        for n in notes {
            let _ = writeln!(out, "{n}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_callgrinds_total() {
        let stderr = "==5582== Events    : Ir\n==5582== Collected : 47270943\n==5582==\n";
        assert_eq!(collected(stderr), Some(47_270_943));
        assert_eq!(collected("no total"), None);
    }

    #[test]
    fn table_divides_and_compares() {
        let cases = vec![("s1".to_string(), "earray".to_string())];
        let mut counts = Counts::new();
        let key = |imp: &str, phase: &'static str| {
            (
                "s1".to_string(),
                "earray".to_string(),
                imp.to_string(),
                phase,
            )
        };
        let c = |instructions, ops| Ok(Count { instructions, ops });
        counts.insert(key("h5chunk", "append"), c(10_000, 10));
        counts.insert(key("libhdf5", "append"), c(40_000, 10));
        counts.insert(key("h5chunk", "lookup"), c(3_000, 3));
        counts.insert(key("libhdf5", "lookup"), Err("no valgrind".into()));
        let t = table(&cases, &counts, 10);
        let row = t.lines().find(|l| l.starts_with("s1")).unwrap();
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(
            cells,
            ["s1", "earray", "1000", "4000", "0.25x", "1000", "n/a", "-"]
        );
    }
}
