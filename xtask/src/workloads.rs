//! `cargo xtask bench --workloads [--quick] [--rounds N]`: user-shaped workloads with default
//! options, h5chunk against h5py (the xtask venv) and the libhdf5 C API.
//!
//! Five workloads (issue 39's table): a logger (100,000 appends of one row of 8 f64, chunks
//! of 1,024 rows, a flush every 100 appends), frames (400 frames 512×512 u16, shuffle + gzip 4,
//! one frame a chunk), a bulk write (one 8192×8192 f32 array, chunks 512×512, unfiltered, then
//! close), a bulk read of that file, and 2,000 random 64×64 windows of it. Each is run by
//! `h5chunk-workloads` (default options, then `Durability::Sync` and `Durability::Flush`),
//! `benches/workloads/workloads_bench.py` (h5py) and `benches/libhdf5/workloads_bench.c`, one
//! process a run, the sides alternating within each round (each round starting one side
//! further on; before each bulk write the side's old file is removed and the machine's dirty
//! pages written back, untimed); the table keeps each side's best round (a shared machine only
//! ever slows a run down). Every program prints a `check` figure
//! (sums of values read back, the file's MiB for the bulk write) and the task fails when the
//! sides disagree. Writes `target/bench/workloads.csv`.
//!
//! `--quick` shrinks every size (2,000 appends, 8 frames of 128×128, a 1024×1024 array in
//! 256×256 chunks, 100 windows) and makes one round: `cargo xtask test` runs it to prove the
//! verb works end to end; its figures mean nothing.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::TaskResult;
use crate::harness::{build_bench_bin, build_c_program, parse_line};

/// The workloads in table order, with what the table calls them.
const WORKLOADS: [(&str, &str); 5] = [
    ("logger", "logger"),
    ("frames", "frames"),
    ("bulk", "bulk write"),
    ("read", "bulk read"),
    ("windows", "random windows"),
];

/// The sides: (column, program, durability argument).
const SIDES: [(&str, Prog, &str); 5] = [
    ("h5chunk", Prog::Ours, "default"),
    ("h5py", Prog::Python, "default"),
    ("libhdf5", Prog::C, "default"),
    ("h5chunk Sync", Prog::Ours, "sync"),
    ("h5chunk Flush", Prog::Ours, "flush"),
];

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Prog {
    Ours,
    Python,
    C,
}

/// The numbers each workload takes.
#[derive(Debug, PartialEq)]
struct Sizes {
    appends: u64,
    frames: u64,
    frame_side: u64,
    side: u64,
    chunk: u64,
    windows: u64,
}

const FULL: Sizes = Sizes {
    appends: 100_000,
    frames: 400,
    frame_side: 512,
    side: 8192,
    chunk: 512,
    windows: 2000,
};

const QUICK: Sizes = Sizes {
    appends: 2000,
    frames: 8,
    frame_side: 128,
    side: 1024,
    chunk: 256,
    windows: 100,
};

impl Sizes {
    fn args(&self, workload: &str) -> Vec<u64> {
        match workload {
            "logger" => vec![self.appends],
            "frames" => vec![self.frames, self.frame_side],
            "bulk" | "read" => vec![self.side, self.chunk],
            "windows" => vec![self.windows, self.side],
            _ => Vec::new(),
        }
    }
}

#[derive(Debug, PartialEq)]
struct Options {
    quick: bool,
    rounds: u32,
}

fn parse_options(args: &[String]) -> Result<Options, String> {
    let mut o = Options {
        quick: false,
        rounds: 3,
    };
    let mut rounds_given = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--quick" => o.quick = true,
            "--rounds" => {
                o.rounds = it
                    .next()
                    .and_then(|v| v.parse().ok())
                    .filter(|&v| v > 0)
                    .ok_or("--rounds needs a positive number")?;
                rounds_given = true;
            }
            other => return Err(format!("bench --workloads: unexpected argument `{other}`")),
        }
    }
    if o.quick && !rounds_given {
        o.rounds = 1;
    }
    Ok(o)
}

/// One run: (seconds, check), or why there is none.
fn measure(cmd: &mut Command) -> Result<(f64, f64), String> {
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run {:?}: {e}", cmd.get_program()))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let fields = stdout
        .lines()
        .filter_map(parse_line)
        .find(|(kind, _)| *kind == "RESULT")
        .map(|(_, f)| f);
    let num = |f: &BTreeMap<String, String>, k: &str| f.get(k).and_then(|v| v.parse::<f64>().ok());
    match fields {
        Some(f) if out.status.success() => match (num(&f, "seconds"), num(&f, "check")) {
            (Some(s), Some(c)) => Ok((s, c)),
            _ => Err(format!(
                "{}: RESULT without seconds/check",
                crate::describe(cmd)
            )),
        },
        _ => {
            let stderr = String::from_utf8_lossy(&out.stderr);
            Err(format!(
                "{} exited {}: {}",
                crate::describe(cmd),
                out.status,
                stderr.lines().last().unwrap_or("")
            ))
        }
    }
}

/// The sides in the order round `round` runs them: each round starts one side further on, so
/// no side always runs right after the same neighbour (whose files the kernel may still be
/// writing back).
fn rotated<T: Copy>(sides: &[T], round: u32) -> Vec<T> {
    let k = round as usize % sides.len().max(1);
    sides
        .iter()
        .cycle()
        .skip(k)
        .take(sides.len())
        .copied()
        .collect()
}

/// Before a bulk write: the side's old bulk file removed (`clean`) and every dirty page on
/// the machine written back (`sync`), untimed, so each side's 256 MiB write starts from the
/// same state instead of meeting the writeback of the file the side before it wrote. Without
/// this the row moved by up to 2x on either side from run to run.
fn settle(clean: &mut Command) {
    let _ = clean.output();
    crate::harness::settle_writeback();
}

/// Best seconds and the check, by (workload, side column).
type Best = BTreeMap<(String, String), (f64, f64)>;

/// The table: one row per workload, each side's best seconds and h5chunk's ratios
/// (other side's seconds over h5chunk's: above 1 means h5chunk is faster).
fn table(best: &Best, sizes: &Sizes, rounds: u32) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "\nworkloads, default options on every side, best of {rounds} round(s), seconds \
         (ratio = other side's seconds / h5chunk's; > 1 means h5chunk is faster)\n\
         sizes: logger {} appends; frames {} of {}x{}; bulk {}x{} f32 in {}x{} chunks; {} windows",
        sizes.appends,
        sizes.frames,
        sizes.frame_side,
        sizes.frame_side,
        sizes.side,
        sizes.side,
        sizes.chunk,
        sizes.chunk,
        sizes.windows
    );
    let _ = writeln!(
        t,
        "{:<15} {:>9} {:>9} {:>9} {:>9} {:>10} {:>12} {:>13}",
        "workload",
        "h5chunk",
        "h5py",
        "libhdf5",
        "vs h5py",
        "vs libhdf5",
        "h5chunk Sync",
        "h5chunk Flush"
    );
    let _ = writeln!(t, "{}", "-".repeat(94));
    for (w, label) in WORKLOADS {
        let get = |side: &str| best.get(&(w.to_string(), side.to_string())).map(|b| b.0);
        let secs = |side: &str| get(side).map_or("-".to_string(), |s| format!("{s:.3}"));
        let ratio = |side: &str| match (get(side), get("h5chunk")) {
            (Some(o), Some(us)) if us > 0.0 => format!("{:.2}x", o / us),
            _ => "-".to_string(),
        };
        let _ = writeln!(
            t,
            "{label:<15} {:>9} {:>9} {:>9} {:>9} {:>10} {:>12} {:>13}",
            secs("h5chunk"),
            secs("h5py"),
            secs("libhdf5"),
            ratio("h5py"),
            ratio("libhdf5"),
            secs("h5chunk Sync"),
            secs("h5chunk Flush"),
        );
    }
    t
}

fn csv(best: &Best) -> String {
    let mut c = String::from("workload,side,best_s,check\n");
    for ((w, side), (s, check)) in best {
        let _ = writeln!(c, "{w},{side},{s:.6},{check}");
    }
    c
}

/// The sides whose `check` differs from h5chunk's default run, per workload.
fn disagreements(best: &Best) -> Vec<String> {
    let mut out = Vec::new();
    for (w, _) in WORKLOADS {
        let Some(&(_, ours)) = best.get(&(w.to_string(), "h5chunk".to_string())) else {
            continue;
        };
        for (side, _, _) in SIDES {
            if let Some(&(_, theirs)) = best.get(&(w.to_string(), side.to_string()))
                && (theirs - ours).abs() > 1e-9 * ours.abs().max(1.0)
            {
                out.push(format!("{w}: {side} checks {theirs}, h5chunk {ours}"));
            }
        }
    }
    out
}

pub fn run(root: &Path, args: &[String]) -> TaskResult {
    let python = match std::env::var_os("H5CHUNK_PYTHON").filter(|p| !p.is_empty()) {
        Some(p) => PathBuf::from(p),
        None => crate::fixtures::ensure_venv(root)?,
    };
    run_with(root, &python, args)
}

/// The task with a given Python (`cargo xtask test` passes the venv it made).
pub fn run_with(root: &Path, python: &Path, args: &[String]) -> TaskResult {
    let o = parse_options(args)?;
    let sizes = if o.quick { &QUICK } else { &FULL };
    let out_dir = root.join("target").join("bench");
    let files = out_dir.join("files");
    std::fs::create_dir_all(&files).map_err(|e| format!("{}: {e}", files.display()))?;
    eprintln!("xtask bench --workloads: building h5chunk-workloads (release)");
    let ours = build_bench_bin(root, "h5chunk-workloads")?;
    let theirs = crate::install::ensure(crate::install::LIBHDF5)
        .and_then(|()| build_c_program(root, &out_dir, "workloads_bench"))?;
    let script = root
        .join("benches")
        .join("workloads")
        .join("workloads_bench.py");
    let command = |prog: Prog, workload: &str, durability: &str, numbers: &[u64]| {
        let mut cmd = match prog {
            Prog::Ours => Command::new(&ours),
            Prog::Python => {
                let mut c = Command::new(python);
                c.arg(&script);
                c
            }
            Prog::C => Command::new(&theirs),
        };
        cmd.arg(workload).arg(&files).arg(durability);
        cmd.args(numbers.iter().map(u64::to_string));
        cmd
    };

    let mut best = Best::new();
    let mut failures = Vec::new();
    for round in 0..o.rounds {
        for (w, _) in WORKLOADS {
            for (side, prog, durability) in rotated(&SIDES, round) {
                if w == "bulk" {
                    settle(&mut command(prog, "clean", durability, &[]));
                }
                eprintln!(
                    "xtask bench --workloads: round {}/{}: {w} {side}",
                    round + 1,
                    o.rounds
                );
                match measure(&mut command(prog, w, durability, &sizes.args(w))) {
                    Ok((s, check)) => {
                        let key = (w.to_string(), side.to_string());
                        if best.get(&key).is_none_or(|b| s < b.0) {
                            best.insert(key, (s, check));
                        }
                    }
                    Err(why) => failures.push(format!("{w} {side}: {why}")),
                }
            }
        }
    }
    // The bulk files (one per side) are large: removed however the runs went.
    for (_, prog, durability) in SIDES {
        let _ = command(prog, "clean", durability, &[]).output();
    }
    let mut t = table(&best, sizes, o.rounds);
    if o.quick {
        let _ = writeln!(
            t,
            "(--quick: small sizes, one round; the figures mean nothing)"
        );
    }
    print!("{t}");
    crate::bench_verdict(
        "bench --workloads",
        &out_dir.join("workloads.csv"),
        &csv(&best),
        failures,
        disagreements(&best),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quick_makes_one_round_unless_told() {
        let o = parse_options(&["--quick".to_string()]).unwrap();
        assert_eq!(
            o,
            Options {
                quick: true,
                rounds: 1
            }
        );
        let o = parse_options(&["--quick".into(), "--rounds".into(), "2".into()]).unwrap();
        assert_eq!(o.rounds, 2);
        assert_eq!(parse_options(&[]).unwrap().rounds, 3);
        assert!(parse_options(&["--rounds".into(), "0".into()]).is_err());
        assert_eq!(FULL.args("windows"), vec![2000, 8192]);
    }

    #[test]
    fn rounds_start_one_side_further_on() {
        assert_eq!(rotated(&[1, 2, 3], 0), vec![1, 2, 3]);
        assert_eq!(rotated(&[1, 2, 3], 1), vec![2, 3, 1]);
        assert_eq!(rotated(&[1, 2, 3], 4), vec![2, 3, 1]);
        assert!(rotated::<u8>(&[], 2).is_empty());
    }

    #[test]
    fn table_ratios_and_disagreements() {
        let mut b = Best::new();
        b.insert(("bulk".into(), "h5chunk".into()), (0.5, 256.0));
        b.insert(("bulk".into(), "h5py".into()), (1.0, 256.0));
        b.insert(("bulk".into(), "libhdf5".into()), (0.25, 257.0));
        let t = table(&b, &FULL, 3);
        let row = t.lines().find(|l| l.starts_with("bulk write")).unwrap();
        assert!(row.contains("2.00x") && row.contains("0.50x"), "{row}");
        assert_eq!(
            disagreements(&b),
            vec!["bulk: libhdf5 checks 257, h5chunk 256"]
        );
    }
}
