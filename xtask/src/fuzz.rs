//! `cargo xtask fuzz [--minutes M] [--seed S] [--cases N]`: a seeded mutation campaign over the
//! fixtures through the `h5chunk` CLI (`ls`, `check`, `cat` of up to three datasets), each run a
//! child process under a memory cap (`prlimit --as`) and a timeout.
//!
//! Mutations: random byte flips; flips inside a checksummed structure (found by its signature,
//! its length by where its lookup3 checksum matches) with the checksum left stale or
//! recomputed; truncations; extreme values (0, 2^32-1, 2^40, 2^50, 2^63, all ones) written over
//! 2-, 4- and 8-byte fields inside structures. Outcomes: `same` (exit 0, output as on the
//! unmutated file), `error` (a clean one-line error), `panic`, `abort`, `crash` (another
//! signal), `hang`, `wrong` (exit 0, other output) and, for `check`, `missed` (exit 0 although
//! `ls` or `cat` of some dataset failed, other than because its path no longer names it).
//! Wrong values are split by what guarded the bytes the mutation changed (no checksum, a
//! checksum the mutator recomputed, a checksum left stale, a truncation). A panic, abort,
//! crash, hang, or wrong value read past a stale checksum fails the task, and so does a
//! `check` miss (the read path refusing a file `check` called clean breaks the rule that it
//! enforces what `check` reports); each finding is kept under `target/fuzz/findings/`, each
//! miss under `target/fuzz/missed/`, with a note of how to reproduce it.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::TaskResult;

/// Signatures of checksummed structures.
const CHECKSUMMED: [&[u8; 4]; 13] = [
    b"OHDR", b"OCHK", b"BTHD", b"BTIN", b"BTLF", b"EAHD", b"EAIB", b"EASB", b"EADB", b"FAHD",
    b"FADB", b"FRHP", b"FHDB",
];
/// Signatures of structures without a checksum.
const PLAIN: [&[u8; 4]; 3] = [b"TREE", b"SNOD", b"HEAP"];
const EXTREMES: [u64; 7] = [
    0,
    0xffff_ffff,
    1 << 40,
    1 << 50,
    1 << 63,
    u64::MAX,
    u64::MAX - 1,
];
/// Address-space cap of each run.
const MEMORY_CAP: u64 = 2 << 30;
const TIMEOUT: Duration = Duration::from_secs(10);
/// Most bytes of a child's output read: a mutant whose dataset grew to 2^60 elements (a size
/// libhdf5 accepts too) makes `cat` print fill values for as long as it is let, which is
/// output, not a hang, and must not pile up in this process. Past this, the output is not the
/// seed's (whose datasets are small), so the run is a wrong value, judged by its guard.
const OUTPUT_CAP: u64 = 256 << 20;

pub struct SplitMix(pub u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// lookup3 `hashlittle(data, 0)` (HDF5's metadata checksum).
pub fn lookup3(data: &[u8]) -> u32 {
    let init = 0xdead_beef_u32.wrapping_add(data.len() as u32);
    let (mut a, mut b, mut c) = (init, init, init);
    let word = |b: &[u8], at: usize| u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
    let mut rest = data;
    while rest.len() > 12 {
        a = a.wrapping_add(word(rest, 0));
        b = b.wrapping_add(word(rest, 4));
        c = c.wrapping_add(word(rest, 8));
        a = a.wrapping_sub(c) ^ c.rotate_left(4);
        c = c.wrapping_add(b);
        b = b.wrapping_sub(a) ^ a.rotate_left(6);
        a = a.wrapping_add(c);
        c = c.wrapping_sub(b) ^ b.rotate_left(8);
        b = b.wrapping_add(a);
        a = a.wrapping_sub(c) ^ c.rotate_left(16);
        c = c.wrapping_add(b);
        b = b.wrapping_sub(a) ^ a.rotate_left(19);
        a = a.wrapping_add(c);
        c = c.wrapping_sub(b) ^ b.rotate_left(4);
        b = b.wrapping_add(a);
        rest = &rest[12..];
    }
    if rest.is_empty() {
        return c;
    }
    let mut t = [0u8; 12];
    t[..rest.len()].copy_from_slice(rest);
    a = a.wrapping_add(word(&t, 0));
    b = b.wrapping_add(word(&t, 4));
    c = c.wrapping_add(word(&t, 8));
    c = (c ^ b).wrapping_sub(b.rotate_left(14));
    a = (a ^ c).wrapping_sub(c.rotate_left(11));
    b = (b ^ a).wrapping_sub(a.rotate_left(25));
    c = (c ^ b).wrapping_sub(b.rotate_left(16));
    a = (a ^ c).wrapping_sub(c.rotate_left(4));
    b = (b ^ a).wrapping_sub(a.rotate_left(14));
    (c ^ b).wrapping_sub(b.rotate_left(24))
}

/// A structure found in a seed: its start, the length its checksum covers (if any).
#[derive(Clone, Copy, Debug)]
pub struct Structure {
    pub at: usize,
    pub covered: Option<usize>,
}

/// Every structure in `bytes`; a checksummed one's covered length is the shortest prefix
/// (up to 64 KiB) whose lookup3 matches the four bytes after it.
pub fn structures(bytes: &[u8]) -> Vec<Structure> {
    let mut out = Vec::new();
    // Superblocks (at 0, 512, 1024, ...): versions 2 and 3 end in a lookup3 checksum.
    let mut base = 0usize;
    while base + 9 <= bytes.len() {
        if &bytes[base..base + 8] == b"\x89HDF\r\n\x1a\n" {
            let limit = (bytes.len() - base).min(256);
            let covered = (bytes[base + 8] >= 2)
                .then(|| {
                    (9..limit.saturating_sub(3)).find(|&n| {
                        let stored = &bytes[base + n..base + n + 4];
                        u32::from_le_bytes([stored[0], stored[1], stored[2], stored[3]])
                            == lookup3(&bytes[base..base + n])
                    })
                })
                .flatten();
            out.push(Structure { at: base, covered });
            break;
        }
        base = if base == 0 { 512 } else { base * 2 };
    }
    for at in 0..bytes.len().saturating_sub(4) {
        let sig = &bytes[at..at + 4];
        if PLAIN.iter().any(|s| s.as_slice() == sig) {
            out.push(Structure { at, covered: None });
        } else if CHECKSUMMED.iter().any(|s| s.as_slice() == sig) {
            let limit = (bytes.len() - at).min(64 << 10);
            let covered = (8..limit.saturating_sub(3)).find(|&n| {
                let stored = &bytes[at + n..at + n + 4];
                u32::from_le_bytes([stored[0], stored[1], stored[2], stored[3]])
                    == lookup3(&bytes[at..at + n])
            });
            if covered.is_some() {
                out.push(Structure { at, covered });
            }
        }
    }
    out
}

/// One mutant and how it was made.
pub struct Mutant {
    pub bytes: Vec<u8>,
    pub kind: &'static str,
    pub offset: usize,
    /// The byte positions changed (empty for a truncation).
    pub changed: Vec<usize>,
    /// The structure whose checksum the mutator recomputed after changing it.
    pub resummed: Option<usize>,
}

/// What guards the bytes a mutant changed: how a wrong value from it is to be judged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Guard {
    /// No checksum covers them (raw chunk bytes, or metadata of formats without checksums:
    /// superblocks v0/v1, object headers v1, v1 B-tree nodes, symbol tables, local heaps):
    /// a consistent change there is undetectable by design.
    None,
    /// A checksum covers them and the mutator recomputed it: the file is consistent again.
    Recomputed,
    /// A checksum covers them and was left stale: reading them is a failure to verify.
    Stale,
    /// The file was cut short.
    Truncated,
}

impl Guard {
    pub fn name(self) -> &'static str {
        match self {
            Guard::None => "no checksum covers the bytes",
            Guard::Recomputed => "checksum recomputed by the mutator",
            Guard::Stale => "STALE checksum (a read that skipped verification)",
            Guard::Truncated => "truncation",
        }
    }
}

/// The guard of the bytes `m` changed: `Stale` if any lies under a checksum left stale, else
/// `Recomputed` if any lies under the recomputed one, else `None`.
pub fn guard(m: &Mutant, found: &[Structure]) -> Guard {
    if m.kind == "truncate" {
        return Guard::Truncated;
    }
    let mut g = Guard::None;
    for &p in &m.changed {
        for s in found {
            let Some(n) = s.covered else { continue };
            if p >= s.at && p < s.at + n + 4 {
                if m.resummed == Some(s.at) {
                    g = g.max(Guard::Recomputed);
                } else {
                    return Guard::Stale;
                }
            }
        }
    }
    g
}

pub fn mutate(seed: &[u8], found: &[Structure], rng: &mut SplitMix) -> Mutant {
    let mut b = seed.to_vec();
    let len = b.len().max(1);
    match rng.below(6) {
        0 => {
            let offset = rng.below(len);
            let mut changed = Vec::new();
            for _ in 0..1 + rng.below(4) {
                let i = (offset + rng.below(16)).min(b.len() - 1);
                b[i] ^= 1 << rng.below(8);
                changed.push(i);
            }
            // Two flips of one byte may cancel: keep the bytes that differ, once each.
            changed.sort_unstable();
            changed.dedup();
            changed.retain(|&i| b[i] != seed[i]);
            Mutant {
                bytes: b,
                kind: "flip",
                offset,
                changed,
                resummed: None,
            }
        }
        1 => {
            let offset = rng.below(len);
            b.truncate(offset);
            Mutant {
                bytes: b,
                kind: "truncate",
                offset,
                changed: Vec::new(),
                resummed: None,
            }
        }
        k => {
            let Some(s) = (!found.is_empty()).then(|| found[rng.below(found.len())]) else {
                return Mutant {
                    bytes: b,
                    kind: "none",
                    offset: 0,
                    changed: Vec::new(),
                    resummed: None,
                };
            };
            let end = s.at + s.covered.unwrap_or(64).min(b.len() - s.at);
            let span = end.saturating_sub(s.at + 4).max(1);
            let offset = (s.at + 4 + rng.below(span)).min(b.len() - 1);
            let mut changed = Vec::new();
            let kind = if k <= 3 {
                b[offset] ^= 1 << rng.below(8);
                changed.push(offset);
                "structure flip"
            } else {
                let width = [2usize, 4, 8][rng.below(3)];
                let v = EXTREMES[rng.below(EXTREMES.len())].to_le_bytes();
                let w = width.min(b.len() - offset);
                b[offset..offset + w].copy_from_slice(&v[..w]);
                changed.extend((offset..offset + w).filter(|&i| b[i] != seed[i]));
                "extreme field"
            };
            let resum = s.covered.is_some() && rng.below(2) == 0;
            if let (true, Some(n)) = (resum, s.covered) {
                let sum = lookup3(&b[s.at..s.at + n]).to_le_bytes();
                b[s.at + n..s.at + n + 4].copy_from_slice(&sum);
            }
            Mutant {
                bytes: b,
                kind: match (kind, resum) {
                    ("structure flip", true) => "structure flip, checksum recomputed",
                    ("extreme field", true) => "extreme field, checksum recomputed",
                    (k, _) => k,
                },
                offset,
                changed,
                resummed: (resum && s.covered.is_some()).then_some(s.at),
            }
        }
    }
}

/// What one run did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Outcome {
    Same,
    Error,
    Wrong,
    Missed,
    Panic,
    Abort,
    Crash,
    Hang,
}

impl Outcome {
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Same => "same",
            Outcome::Error => "error",
            Outcome::Wrong => "wrong value",
            Outcome::Missed => "check missed",
            Outcome::Panic => "panic",
            Outcome::Abort => "abort",
            Outcome::Crash => "crash",
            Outcome::Hang => "hang",
        }
    }
    pub fn is_bug(self) -> bool {
        matches!(
            self,
            Outcome::Panic | Outcome::Abort | Outcome::Crash | Outcome::Hang
        )
    }
}

/// How one run ended.
pub struct Ran {
    pub code: Option<i32>,
    pub signal: Option<i32>,
    pub stdout_hash: u64,
    pub stderr: String,
    pub timed_out: bool,
    /// The child printed more than [`OUTPUT_CAP`] bytes (and was stopped).
    pub overflowed: bool,
}

fn hash(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

fn run_one(exe: &Path, args: &[&str], prlimit: bool) -> Ran {
    let mut cmd = if prlimit {
        let mut c = Command::new("prlimit");
        c.arg(format!("--as={MEMORY_CAP}")).arg("--").arg(exe);
        c
    } else {
        Command::new(exe)
    };
    let mut child = match cmd
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => {
            return Ran {
                code: None,
                signal: None,
                stdout_hash: 0,
                stderr: format!("cannot run: {e}"),
                timed_out: false,
                overflowed: false,
            };
        }
    };
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    // The output hashed as it comes, up to the cap: then the pipe is closed, and the child's
    // next write fails.
    let reader = std::thread::spawn(move || {
        let mut h = hash(&[]);
        let mut n = 0u64;
        let mut buf = vec![0u8; 1 << 16];
        loop {
            match out.read(&mut buf) {
                Ok(0) | Err(_) => return (h, false),
                Ok(k) => {
                    h = buf[..k]
                        .iter()
                        .fold(h, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3));
                    n += k as u64;
                    if n > OUTPUT_CAP {
                        return (h, true);
                    }
                }
            }
        }
    });
    let err_reader = std::thread::spawn(move || {
        let mut e = Vec::new();
        let _ = err.read_to_end(&mut e);
        e
    });
    let start = Instant::now();
    let mut timed_out = false;
    let status = loop {
        if let Ok(Some(s)) = child.try_wait() {
            break Some(s);
        }
        if start.elapsed() > TIMEOUT {
            timed_out = true;
            let _ = child.kill();
            break child.wait().ok();
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let (stdout_hash, overflowed) = reader.join().unwrap_or((0, false));
    let stderr = String::from_utf8_lossy(&err_reader.join().unwrap_or_default()).into_owned();
    use std::os::unix::process::ExitStatusExt;
    Ran {
        code: status.and_then(|s| s.code()),
        signal: status.and_then(|s| s.signal()),
        stdout_hash,
        stderr,
        timed_out: timed_out && !overflowed,
        overflowed,
    }
}

pub fn classify(ran: &Ran, baseline: Option<u64>) -> Outcome {
    let Ran {
        code,
        signal,
        stdout_hash,
        stderr,
        timed_out,
        overflowed,
    } = ran;
    if *timed_out {
        return Outcome::Hang;
    }
    // Endless output, stopped: not the seed's output (see OUTPUT_CAP).
    if *overflowed {
        return Outcome::Wrong;
    }
    if stderr.contains("panicked at") || *code == Some(101) {
        return Outcome::Panic;
    }
    if stderr.contains("memory allocation of") || stderr.contains("capacity overflow") {
        return Outcome::Abort;
    }
    match (code, signal) {
        (_, Some(6)) => Outcome::Abort,
        (_, Some(_)) => Outcome::Crash,
        (Some(0), _) if baseline == Some(*stdout_hash) => Outcome::Same,
        (Some(0), _) => Outcome::Wrong,
        _ => Outcome::Error,
    }
}

/// The datasets `h5chunk ls` lists in a file.
fn datasets(exe: &Path, file: &Path) -> Vec<String> {
    let o = Command::new(exe).arg("ls").arg(file).output();
    let Ok(o) = o else { return Vec::new() };
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| l.contains(" shape="))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

/// The campaign; `budget` bounds it by time, `cases` (if any) by mutant count.
pub fn campaign(root: &Path, budget: Duration, cases: Option<u64>, seed: u64) -> TaskResult {
    let exe = crate::harness::build_release_bin(root, "h5chunk-cli", "h5chunk")?;
    // Without the cap the kernel's overcommit hides every allocation a hostile file sizes (it
    // succeeds, untouched): a campaign without it would call such files fine (issue 40).
    if crate::find_on_path("prlimit").is_none() {
        return Err(format!(
            "fuzz: `prlimit` (util-linux) is needed to run each child under --as={MEMORY_CAP}"
        ));
    }
    let prlimit = true;
    let out_dir = root.join("target").join("fuzz");
    let findings = out_dir.join("findings");
    std::fs::create_dir_all(&findings).map_err(|e| e.to_string())?;
    let mut seeds: Vec<PathBuf> = Vec::new();
    for dir in [
        root.join("fixtures").join("libhdf5"),
        root.join("target").join("fixtures"),
    ] {
        if let Ok(rd) = std::fs::read_dir(&dir) {
            seeds.extend(
                rd.filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| p.extension().is_some_and(|e| e == "h5")),
            );
        }
    }
    seeds.sort();
    if seeds.is_empty() {
        return Err("no fixtures to mutate".into());
    }
    struct Seed {
        path: PathBuf,
        bytes: Vec<u8>,
        found: Vec<Structure>,
        datasets: Vec<String>,
        baseline: BTreeMap<String, u64>,
    }
    let mut prepared = Vec::new();
    for path in seeds {
        let bytes = std::fs::read(&path).map_err(|e| e.to_string())?;
        if bytes.len() > 4 << 20 {
            continue;
        }
        let found = structures(&bytes);
        let datasets = datasets(&exe, &path);
        let mut baseline = BTreeMap::new();
        let p = path.display().to_string();
        baseline.insert(
            "ls".to_string(),
            run_one(&exe, &["ls", &p], false).stdout_hash,
        );
        baseline.insert(
            "check".to_string(),
            run_one(&exe, &["check", &p], false).stdout_hash,
        );
        for d in &datasets {
            let r = run_one(&exe, &["cat", &p, d], false);
            baseline.insert(format!("cat {d}"), r.stdout_hash);
        }
        prepared.push(Seed {
            path,
            bytes,
            found,
            datasets,
            baseline,
        });
    }
    let mut rng = SplitMix(seed);
    // One mutant file per process: a smoke run and a long run may share target/.
    let mutant_path = out_dir.join(format!("mutant-{}.h5", std::process::id()));
    let mut tally: BTreeMap<(String, Outcome), u64> = BTreeMap::new();
    let mut by_kind: BTreeMap<(&'static str, Outcome), u64> = BTreeMap::new();
    // Wrong values by what guarded the changed bytes, per command.
    let mut wrong_by_guard: BTreeMap<(String, Guard), u64> = BTreeMap::new();
    let mut found_bugs = Findings::default();
    let missed = out_dir.join("missed");
    let mut n = 0u64;
    let started = Instant::now();
    while started.elapsed() < budget && cases.is_none_or(|c| n < c) {
        let s = &prepared[rng.below(prepared.len())];
        let m = mutate(&s.bytes, &s.found, &mut rng);
        std::fs::write(&mutant_path, &m.bytes).map_err(|e| e.to_string())?;
        let mp = mutant_path.display().to_string();
        let mut commands: Vec<(String, Vec<String>)> = vec![
            ("ls".into(), vec!["ls".into(), mp.clone()]),
            ("check".into(), vec!["check".into(), mp.clone()]),
        ];
        for _ in 0..3.min(s.datasets.len()) {
            let d = &s.datasets[rng.below(s.datasets.len())];
            commands.push((
                format!("cat {d}"),
                vec!["cat".into(), mp.clone(), d.clone()],
            ));
        }
        let guarded = guard(&m, &s.found);
        let mut runs: Vec<(String, String, Ran, Outcome)> = Vec::new();
        for (name, args) in &commands {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let ran = run_one(&exe, &args, prlimit);
            let outcome = classify(&ran, s.baseline.get(name).copied());
            let cmd = name.split_whitespace().next().unwrap_or("").to_string();
            *tally.entry((cmd.clone(), outcome)).or_default() += 1;
            *by_kind.entry((m.kind, outcome)).or_default() += 1;
            if outcome == Outcome::Wrong {
                *wrong_by_guard.entry((cmd.clone(), guarded)).or_default() += 1;
            }
            // A wrong value read through a checksum left stale: the reader skipped it.
            let unverified = outcome == Outcome::Wrong && guarded == Guard::Stale;
            if outcome.is_bug() || unverified {
                found_bugs.bugs += 1;
                let base = format!(
                    "{}_{}_{}_{}",
                    s.path.file_stem().unwrap_or_default().to_string_lossy(),
                    m.kind.replace([' ', ','], "_"),
                    m.offset,
                    n
                );
                let keep = findings.join(format!("{base}.h5"));
                let _ = std::fs::write(&keep, &m.bytes);
                let note = format!(
                    "{}: h5chunk {} -> {} (exit {:?}, signal {:?})\n{}\n",
                    if unverified {
                        "wrong value past a stale checksum"
                    } else {
                        outcome.name()
                    },
                    args.join(" ").replace(&mp, &keep.display().to_string()),
                    m.kind,
                    ran.code,
                    ran.signal,
                    ran.stderr.lines().take(3).collect::<Vec<_>>().join("\n")
                );
                let _ = std::fs::write(findings.join(format!("{base}.txt")), &note);
                eprint!("finding: {note}");
            }
            runs.push((cmd, args.join(" "), ran, outcome));
        }
        if let Some(why) = check_miss(&runs) {
            *tally.entry(("check".into(), Outcome::Missed)).or_default() += 1;
            found_bugs.misses += 1;
            let base = format!(
                "{}_{}_{n}",
                s.path.file_stem().unwrap_or_default().to_string_lossy(),
                m.kind.replace([' ', ','], "_")
            );
            let why = why.replace(&mp, "MUTANT");
            let kept = keep_miss(&missed, &base, &m.bytes, &why);
            eprintln!("finding: check missed: {why} (kept as {})", kept.display());
        }
        n += 1;
    }
    let secs = started.elapsed().as_secs_f64();
    let mut t = String::new();
    let cmds = ["ls", "check", "cat"];
    let outcomes = [
        Outcome::Same,
        Outcome::Error,
        Outcome::Wrong,
        Outcome::Missed,
        Outcome::Panic,
        Outcome::Abort,
        Outcome::Crash,
        Outcome::Hang,
    ];
    let _ = writeln!(
        t,
        "\nfuzz: {n} mutants of {} seeds in {secs:.0} s ({:.1}/s), seed {seed}",
        prepared.len(),
        n as f64 / secs.max(1e-9)
    );
    let _ = writeln!(
        t,
        "{:<14} {:>8} {:>8} {:>8}",
        "outcome", "ls", "check", "cat"
    );
    for o in outcomes {
        let _ = write!(t, "{:<14}", o.name());
        for c in cmds {
            let _ = write!(
                t,
                " {:>8}",
                tally.get(&(c.to_string(), o)).copied().unwrap_or(0)
            );
        }
        let _ = writeln!(t);
    }
    let _ = writeln!(t, "\nwrong values by what guarded the changed bytes:");
    for guard in [
        Guard::None,
        Guard::Recomputed,
        Guard::Stale,
        Guard::Truncated,
    ] {
        let _ = write!(t, "  {:<52}", guard.name());
        for c in cmds {
            let n = wrong_by_guard
                .get(&(c.to_string(), guard))
                .copied()
                .unwrap_or(0);
            let _ = write!(t, " {c} {n:<6}");
        }
        let _ = writeln!(t);
    }
    let _ = writeln!(t, "\nby mutation (all commands):");
    for ((kind, o), count) in &by_kind {
        if *o != Outcome::Same && *o != Outcome::Error {
            let _ = writeln!(t, "  {kind}: {} {count}", o.name());
        }
    }
    print!("{t}");
    let _ = std::fs::write(out_dir.join("report.txt"), &t);
    let _ = std::fs::remove_file(&mutant_path);
    found_bugs.verdict(&findings, &missed)
}

/// Why `check` missed damage in the runs of one mutant (each: command, arguments, how it ran,
/// its outcome), if it did: `check` exited 0 while `ls` or `cat` failed with an error that is
/// not a consistent change. A path that no longer names the dataset (its name's bytes were
/// hit, or its link now reaches a group, a named datatype, or is a soft link to the root) is
/// a consistent change, and a dataset too large to read into memory at once is a resource
/// refusal: neither is damage that `check` should see. Panics, aborts, crashes and hangs are
/// findings of their own.
pub fn check_miss(runs: &[(String, String, Ran, Outcome)]) -> Option<String> {
    const CONSISTENT: [&str; 6] = [
        "no member named",
        "names no member of a group",
        "not a group",
        "not a dataset",
        "do not fit in memory",
        "than memory can address",
    ];
    let check_clean = runs
        .iter()
        .any(|(cmd, _, ran, _)| cmd == "check" && ran.code == Some(0));
    if !check_clean {
        return None;
    }
    runs.iter()
        .find(|(cmd, _, ran, outcome)| {
            matches!(cmd.as_str(), "ls" | "cat")
                && *outcome == Outcome::Error
                && !CONSISTENT.iter().any(|why| ran.stderr.contains(why))
        })
        .map(|(_, args, ran, _)| format!("{args}: {}", ran.stderr.trim()))
}

/// Keep a mutant `check` missed in `dir` as `base.h5`, with `base.txt` saying why; the path
/// of the mutant (its write is best effort: a full disk must not end the campaign).
pub fn keep_miss(dir: &Path, base: &str, bytes: &[u8], why: &str) -> PathBuf {
    let _ = std::fs::create_dir_all(dir);
    let keep = dir.join(format!("{base}.h5"));
    let _ = std::fs::write(&keep, bytes);
    let note = format!(
        "check missed: `h5chunk check` exits 0, but\n{}\nreproduce: h5chunk check {k}; then the \
         command above with MUTANT = {k}\n",
        why,
        k = keep.display()
    );
    let _ = std::fs::write(dir.join(format!("{base}.txt")), note);
    keep
}

/// What fails a campaign: runs that panicked, aborted, crashed, hung or read past a stale
/// checksum, and mutants whose damage `check` missed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Findings {
    pub bugs: u64,
    pub misses: u64,
}

impl Findings {
    /// The task's result: an error naming where the findings were kept if there is any.
    pub fn verdict(self, findings: &Path, missed: &Path) -> TaskResult {
        let mut why = Vec::new();
        if self.bugs > 0 {
            why.push(format!(
                "{} runs panicked, aborted, crashed, hung or read past a stale checksum: see {}",
                self.bugs,
                findings.display()
            ));
        }
        if self.misses > 0 {
            why.push(format!(
                "{} mutants `check` called clean were refused by `ls` or `cat`: see {}",
                self.misses,
                missed.display()
            ));
        }
        if why.is_empty() {
            Ok(())
        } else {
            Err(why.join("; "))
        }
    }
}

pub fn run(root: &Path, args: &[String]) -> TaskResult {
    let mut minutes = 1.0f64;
    let mut seed = 1u64;
    let mut cases = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let v = it.next().ok_or_else(|| format!("`{a}` needs a value"))?;
        match a.as_str() {
            "--minutes" => minutes = v.parse().map_err(|e| format!("--minutes: {e}"))?,
            "--seed" => seed = v.parse().map_err(|e| format!("--seed: {e}"))?,
            "--cases" => cases = Some(v.parse().map_err(|e| format!("--cases: {e}"))?),
            other => return Err(format!("fuzz: unexpected argument `{other}`")),
        }
    }
    campaign(root, Duration::from_secs_f64(minutes * 60.0), cases, seed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup3_matches_known_values() {
        assert_eq!(lookup3(b""), 0xdead_beef);
        assert_eq!(lookup3(b"Four score and seven years ago"), 0x1777_0551);
    }

    #[test]
    fn structures_are_found_with_their_checksums() {
        let mut b = vec![0u8; 10];
        let at = b.len();
        b.extend_from_slice(b"EAHD\x00\x01somebytes");
        let n = b.len() - at;
        let sum = lookup3(&b[at..]);
        b.extend_from_slice(&sum.to_le_bytes());
        b.extend_from_slice(b"TREE....");
        let s = structures(&b);
        assert_eq!(s.len(), 2);
        assert_eq!((s[0].at, s[0].covered), (at, Some(n)));
        assert_eq!(s[1].covered, None);
    }

    #[test]
    fn superblock_checksums_are_found() {
        // Superblock v2: signature, version 2, sizes, flags, four 8-byte addresses, checksum.
        let mut b = b"\x89HDF\r\n\x1a\n\x02\x08\x08\x00".to_vec();
        b.extend_from_slice(&[0u8; 32]);
        let sum = lookup3(&b).to_le_bytes();
        b.extend_from_slice(&sum);
        b.extend_from_slice(&[0u8; 64]);
        let s = structures(&b);
        assert_eq!((s[0].at, s[0].covered), (0, Some(44)));
        // Version 0 has no checksum.
        b[8] = 0;
        assert_eq!(structures(&b)[0].covered, None);
    }

    #[test]
    fn changed_bytes_are_judged_by_their_checksum() {
        let found = [
            Structure {
                at: 100,
                covered: Some(20),
            },
            Structure {
                at: 300,
                covered: None,
            },
        ];
        let m = |changed: Vec<usize>, resummed, kind| Mutant {
            bytes: Vec::new(),
            kind,
            offset: 0,
            changed,
            resummed,
        };
        assert_eq!(guard(&m(vec![50, 310], None, "flip"), &found), Guard::None);
        // The checksum's own four bytes are covered too.
        assert_eq!(guard(&m(vec![123], None, "flip"), &found), Guard::Stale);
        assert_eq!(guard(&m(vec![124], None, "flip"), &found), Guard::None);
        assert_eq!(
            guard(&m(vec![105], Some(100), "structure flip"), &found),
            Guard::Recomputed
        );
        assert_eq!(
            guard(&m(vec![], None, "truncate"), &found),
            Guard::Truncated
        );
    }

    #[test]
    fn mutants_record_what_they_changed() {
        let mut seed = vec![7u8; 300];
        seed[40..44].copy_from_slice(b"EAHD");
        let sum = lookup3(&seed[40..60]).to_le_bytes();
        seed[60..64].copy_from_slice(&sum);
        let found = structures(&seed);
        let mut rng = SplitMix(11);
        for _ in 0..200 {
            let m = mutate(&seed, &found, &mut rng);
            for &p in &m.changed {
                assert_ne!(
                    m.bytes[p], seed[p],
                    "{}: byte {p} listed but unchanged",
                    m.kind
                );
            }
            if let Some(at) = m.resummed {
                assert_eq!(at, 40);
                assert_eq!(&m.bytes[60..64], &lookup3(&m.bytes[40..60]).to_le_bytes());
            }
        }
    }

    /// The children of the campaign really run under the address-space cap, where an
    /// allocation past it fails (and Rust's "memory allocation of N bytes failed" abort counts
    /// as an abort), instead of being overcommitted.
    #[test]
    fn children_run_under_the_address_space_cap() {
        // The campaign refuses to run without prlimit (util-linux, in every Debian base).
        assert!(crate::find_on_path("prlimit").is_some(), "prlimit missing");
        let ran = run_one(Path::new("/bin/sh"), &["-c", "ulimit -v >&2"], true);
        assert_eq!(ran.code, Some(0), "{}", ran.stderr);
        assert_eq!(ran.stderr.trim(), (MEMORY_CAP / 1024).to_string());
        let uncapped = run_one(Path::new("/bin/sh"), &["-c", "ulimit -v >&2"], false);
        assert_ne!(uncapped.stderr.trim(), ran.stderr.trim());
    }

    fn ran(code: i32, stderr: &str) -> Ran {
        Ran {
            code: Some(code),
            signal: None,
            stdout_hash: 0,
            stderr: stderr.into(),
            timed_out: false,
            overflowed: false,
        }
    }

    fn runs(check: i32, cat_code: i32, cat_err: &str) -> Vec<(String, String, Ran, Outcome)> {
        let cat = ran(cat_code, cat_err);
        let cat_outcome = classify(&cat, Some(0));
        vec![
            ("ls".into(), "ls M".into(), ran(0, ""), Outcome::Same),
            (
                "check".into(),
                "check M".into(),
                ran(check, ""),
                if check == 0 {
                    Outcome::Same
                } else {
                    Outcome::Error
                },
            ),
            ("cat".into(), "cat M /d".into(), cat, cat_outcome),
        ]
    }

    /// `check` exiting 0 where `cat` (or `ls`) then refuses the file is a miss; a refusal
    /// `check` reported, a consistent change (the path names no dataset now) or a resource
    /// refusal is not, and a panic is a finding of its own.
    #[test]
    fn check_misses_are_told_apart() {
        let short = "h5chunk: error: M: /d: corrupt dataset @ 0x320: chunk [0] is shorter";
        assert_eq!(
            check_miss(&runs(0, 1, short)).as_deref(),
            Some(format!("cat M /d: {short}").as_str())
        );
        let mut ls_fails = runs(0, 0, "");
        ls_fails[0].2 = ran(1, "h5chunk: error: bad heap");
        ls_fails[0].3 = Outcome::Error;
        assert!(check_miss(&ls_fails).is_some());
        assert_eq!(check_miss(&runs(1, 1, short)), None);
        assert_eq!(check_miss(&runs(0, 0, "")), None);
        assert_eq!(
            check_miss(&runs(0, 1, "h5chunk: error: M: no member named d")),
            None
        );
        assert_eq!(
            check_miss(&runs(
                0,
                1,
                "h5chunk: error: 2^50 bytes do not fit in memory"
            )),
            None
        );
        assert_eq!(
            check_miss(&runs(0, 101, "thread 'main' panicked at x")),
            None
        );
    }

    /// A miss fails the campaign as a panic does, and the mutant kept for it stays.
    #[test]
    fn a_miss_fails_the_campaign_and_its_mutant_stays() {
        let dir = std::env::temp_dir().join(format!("h5chunk-fuzz-miss-{}", std::process::id()));
        let (findings, missed) = (dir.join("findings"), dir.join("missed"));
        let kept = keep_miss(&missed, "seed_flip_7", b"\x89HDF", "cat MUTANT /d: error");
        assert_eq!(std::fs::read(&kept).unwrap(), b"\x89HDF");
        let note = std::fs::read_to_string(missed.join("seed_flip_7.txt")).unwrap();
        assert!(note.contains("cat MUTANT /d: error"), "{note}");
        assert!(note.contains(&kept.display().to_string()), "{note}");

        assert_eq!(Findings::default().verdict(&findings, &missed), Ok(()));
        let miss = Findings { bugs: 0, misses: 1 }.verdict(&findings, &missed);
        let err = miss.unwrap_err();
        assert!(err.contains("1 mutants `check` called clean"), "{err}");
        assert!(err.contains(&missed.display().to_string()), "{err}");
        let both = Findings { bugs: 2, misses: 1 }.verdict(&findings, &missed);
        assert!(both.unwrap_err().contains("2 runs panicked"));
        assert!(kept.exists(), "the verdict removed the kept mutant");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn mutations_are_reproducible() {
        let seed = vec![7u8; 300];
        let a = mutate(&seed, &[], &mut SplitMix(3)).bytes;
        let b = mutate(&seed, &[], &mut SplitMix(3)).bytes;
        assert_eq!(a, b);
    }

    /// A child that prints without end is stopped at the output cap, its output hashed as
    /// it came (not kept), and judged a wrong value, not a hang.
    #[test]
    fn endless_output_is_stopped_and_wrong() {
        let ran = run_one(Path::new("yes"), &[], false);
        assert!(ran.overflowed, "{:?} {:?}", ran.code, ran.signal);
        assert!(!ran.timed_out);
        assert_eq!(classify(&ran, Some(ran.stdout_hash ^ 1)), Outcome::Wrong);
        let short = run_one(Path::new("echo"), &["hello"], false);
        assert!(!short.overflowed);
        assert_eq!(short.stdout_hash, hash(b"hello\n"));
    }

    #[test]
    fn outcomes_are_classified() {
        let r = |code, signal, stderr: &str, timed_out| Ran {
            code,
            signal,
            stdout_hash: 5,
            stderr: stderr.into(),
            timed_out,
            overflowed: false,
        };
        assert_eq!(
            classify(&r(Some(0), None, "", false), Some(5)),
            Outcome::Same
        );
        assert_eq!(
            classify(&r(Some(0), None, "", false), Some(6)),
            Outcome::Wrong
        );
        assert_eq!(
            classify(&r(Some(1), None, "h5chunk: error: x", false), Some(5)),
            Outcome::Error
        );
        assert_eq!(
            classify(
                &r(Some(101), None, "thread 'main' panicked at", false),
                Some(5)
            ),
            Outcome::Panic
        );
        assert_eq!(
            classify(&r(None, Some(6), "", false), Some(5)),
            Outcome::Abort
        );
        assert_eq!(
            classify(
                &r(None, Some(6), "memory allocation of 5 bytes failed", false),
                None
            ),
            Outcome::Abort
        );
        assert_eq!(
            classify(&r(None, Some(11), "", false), Some(5)),
            Outcome::Crash
        );
        assert_eq!(
            classify(&r(None, Some(9), "", true), Some(5)),
            Outcome::Hang
        );
    }
}
