//! `h5chunk check`: zero problems on every fixture and every file h5chunk writes; one problem
//! or more (exit status 1, never a panic) on damaged copies: a flipped checksum byte in each
//! block type, a damaged signature of the unchecksummed v1 B-tree nodes, truncated files, and
//! an index address past the end of the file.
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used
)]

mod common;

use std::path::{Path, PathBuf};

use common::{ok, ok_text, run, s, tmp};
use h5chunk_format::checksum::lookup3;
use h5chunk_testkit::fixtures;

/// `(exit code, stdout, stderr)` of `h5chunk check FILE`, which must not panic.
fn check(file: &Path) -> (Option<i32>, String, String) {
    let out = run(&["check", s(file)]);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        !stderr.contains("panicked") && out.status.code() != Some(101),
        "check {} panicked: {stderr}",
        file.display()
    );
    (out.status.code(), stdout, stderr)
}

#[test]
fn check_is_clean_on_every_fixture() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(fixtures::dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "h5"))
        .collect();
    files.sort();
    assert!(files.len() >= 10, "{files:?}");
    for file in files {
        let (code, report, stderr) = check(&file);
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        // What cannot be checked yet is said, not hidden, and the exit status says it too:
        // 2 when something was not verified, 0 only when everything was.
        let skipped = report.lines().any(|l| l.starts_with("skipped: "));
        assert_eq!(
            code,
            Some(if skipped { 2 } else { 0 }),
            "{name}: {report}{stderr}"
        );
        assert!(
            report.contains(": 0 problems"),
            "{}: {report}",
            file.display()
        );
        assert_eq!(
            skipped,
            report.contains("not verified (unsupported)"),
            "{report}"
        );
        if name == "dense_groups_latest.h5" {
            // Dense link and attribute storage (fractal heaps) are walked, not skipped.
            assert!(!report.contains("skipped:"), "{report}");
            assert!(report.contains("21 datasets"), "{report}");
        }
        for line in report.lines().filter(|l| l.starts_with("skipped: ")) {
            println!("{name}: {line}");
        }
    }
}

/// Files written by `h5chunk import` with every structure: a latest-format file (object
/// header v2, extensible array with index, super and data blocks, a paged fixed array, a skip
/// list, implicit and single-chunk indexes, a filtered dataset) and an earliest-format one
/// (v1 B-tree chunk index and old-style groups).
fn written_files(dir: &Path) -> (PathBuf, PathBuf) {
    let latest = dir.join("latest.h5");
    let earliest = dir.join("earliest.h5");
    let bytes = |n: usize| -> PathBuf {
        let p = dir.join(format!("in{n}.bin"));
        std::fs::write(&p, (0..n).map(|i| (i * 7 % 251) as u8).collect::<Vec<u8>>()).unwrap();
        p
    };
    let (b2000, b2244, b160, b120) = (bytes(2000), bytes(2244), bytes(160), bytes(120));
    let imports: [&[&str]; 7] = [
        &[
            "/b2",
            "--dtype",
            "u1",
            "--shape",
            "40,50",
            "--chunks",
            "2,2",
            "--maxshape",
            "inf,inf",
            "--index",
            "btree2",
            "--libver",
            "latest",
            "--input",
            s(&b2000),
        ],
        &[
            "/ea",
            "--dtype",
            "u1",
            "--shape",
            "2000",
            "--chunks",
            "1",
            "--maxshape",
            "inf",
            "--index",
            "earray",
            "--input",
            s(&b2000),
        ],
        &[
            "/g/fa",
            "--dtype",
            "i2",
            "--shape",
            "33,34",
            "--chunks",
            "1,1",
            "--index",
            "farray",
            "--input",
            s(&b2244),
        ],
        &[
            "/sl",
            "--dtype",
            "i4",
            "--shape",
            "40",
            "--chunks",
            "4",
            "--maxshape",
            "inf",
            "--index",
            "skiplist",
            "--input",
            s(&b160),
        ],
        &[
            "/imp",
            "--dtype",
            "u2",
            "--shape",
            "6,10",
            "--chunks",
            "2,5",
            "--alloc",
            "early",
            "--index",
            "implicit",
            "--input",
            s(&b120),
        ],
        &[
            "/one",
            "--dtype",
            "u2",
            "--shape",
            "60",
            "--chunks",
            "60",
            "--index",
            "single",
            "--input",
            s(&b120),
        ],
        &[
            "/gz",
            "--dtype",
            "i4",
            "--shape",
            "40",
            "--chunks",
            "3",
            "--maxshape",
            "inf",
            "--shuffle",
            "--deflate",
            "5",
            "--fletcher32",
            "--index",
            "earray",
            "--input",
            s(&b160),
        ],
    ];
    for args in imports {
        let mut full = vec!["import", s(&latest)];
        full.extend_from_slice(args);
        ok(&full);
    }
    // The indexes asked for are the ones written.
    for (path, kind) in [
        ("/b2", "btree2"),
        ("/ea", "earray"),
        ("/g/fa", "farray"),
        ("/imp", "implicit"),
        ("/one", "single"),
    ] {
        let text = ok_text(&["inspect", s(&latest), path]);
        assert!(text.contains(&format!("\nindex: {kind}\n")), "{text}");
    }
    ok(&[
        "import",
        s(&earliest),
        "/g/bt",
        "--dtype",
        "u1",
        "--shape",
        "2000",
        "--chunks",
        "4",
        "--input",
        s(&b2000),
    ]);
    ok(&[
        "import",
        s(&earliest),
        "/gz",
        "--dtype",
        "i4",
        "--shape",
        "40",
        "--chunks",
        "3",
        "--deflate",
        "5",
        "--fletcher32",
        "--input",
        s(&b160),
    ]);
    (latest, earliest)
}

#[test]
fn check_is_clean_on_written_files() {
    let dir = tmp("check_written");
    let (latest, earliest) = written_files(&dir);
    for file in [latest, earliest] {
        let report = ok_text(&["check", s(&file)]);
        assert!(report.ends_with(": 0 problems\n"), "{report}");
        assert!(!report.contains("skipped"), "{report}");
    }
}

/// Where `sig` first occurs in `bytes`.
fn find(bytes: &[u8], sig: &[u8]) -> Option<usize> {
    bytes.windows(sig.len()).position(|w| w == sig)
}

/// The length (checksum included) of the checksummed block starting at `at`: the first `n`
/// whose last four bytes are the lookup3 checksum of the bytes before them.
fn block_len(bytes: &[u8], at: usize) -> Option<usize> {
    let rest = &bytes[at..];
    (12..=rest.len().min(1 << 15)).find(|&n| {
        let (body, sum) = rest[..n].split_at(n - 4);
        lookup3(body) == u32::from_le_bytes(sum.try_into().unwrap())
    })
}

/// `check` must report at least one problem in `file`, one line per problem.
fn assert_reports(file: &Path, what: &str) -> String {
    let (code, stdout, stderr) = check(file);
    assert_eq!(code, Some(1), "{what}: {stdout}{stderr}");
    let problems: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("problem: "))
        .collect();
    assert!(
        !problems.is_empty(),
        "{what}: no problem reported: {stdout}{stderr}"
    );
    // Every problem names an address.
    for p in &problems {
        assert!(p.starts_with("problem: 0x"), "{what}: {p}");
    }
    stdout
}

#[test]
fn check_reports_each_damaged_copy() {
    let dir = tmp("check_damaged");
    let (latest, earliest) = written_files(&dir);
    let index_fixture = fixtures::dir().join("index_latest.h5");
    // Checksummed blocks: flip the last byte of the block's checksum.
    let mut cases: Vec<(&Path, &str)> = vec![
        (&latest, "OHDR"),
        (&latest, "EAHD"),
        (&latest, "EAIB"),
        (&latest, "EASB"),
        (&latest, "EADB"),
        (&latest, "FAHD"),
        (&latest, "FADB"),
        (&latest, "SKLT"),
        (&latest, "SKLS"),
        (&latest, "BTHD"),
        (&latest, "BTIN"),
        (&latest, "BTLF"),
        (&index_fixture, "EAHD"),
        (&index_fixture, "EAIB"),
        (&index_fixture, "EADB"),
        (&index_fixture, "FAHD"),
        (&index_fixture, "FADB"),
    ];
    // The v2 B-tree blocks are checked once its chunk-index adapter can open them.
    let fixture_report = ok_text(&["check", s(&index_fixture)]);
    if fixture_report.contains("unsupported: version 2 B-tree") {
        println!("BTHD/BTLF damage not checked: the v2 B-tree chunk index is unsupported yet");
    } else {
        cases.extend([
            (index_fixture.as_path(), "BTHD"),
            (index_fixture.as_path(), "BTLF"),
        ]);
    }
    for (i, (source, sig)) in cases.iter().enumerate() {
        let mut bytes = std::fs::read(source).unwrap();
        let what = format!("{} {sig}", source.display());
        let at = find(&bytes, sig.as_bytes()).unwrap_or_else(|| panic!("{what}: not found"));
        let len = block_len(&bytes, at).unwrap_or_else(|| panic!("{what}: no checksum found"));
        bytes[at + len - 1] ^= 0x5a;
        let damaged = dir.join(format!("flip{i}_{sig}.h5"));
        std::fs::write(&damaged, &bytes).unwrap();
        let report = assert_reports(&damaged, &what);
        assert!(report.contains("checksum"), "{what}: {report}");
        println!("{what} @ {at:#x}: {}", report.lines().next().unwrap_or(""));
    }
    // A stored chunk whose fletcher32 checksum no longer matches, in each file.
    for file in [&latest, &earliest] {
        let chunk = h5chunk::File::open(file)
            .and_then(|f| f.dataset("/gz"))
            .and_then(|d| d.chunks())
            .unwrap()
            .into_iter()
            .nth(2)
            .unwrap();
        let mut bytes = std::fs::read(file).unwrap();
        bytes[(chunk.addr.get() + chunk.size - 1) as usize] ^= 0x01;
        let damaged = dir.join("fletcher32.h5");
        std::fs::write(&damaged, &bytes).unwrap();
        let report = assert_reports(&damaged, "fletcher32");
        assert!(
            report.contains(&format!(
                "problem: {:#x}: /gz: chunk [2]: ",
                chunk.addr.get()
            )) && report.contains("fletcher32 checksum mismatch"),
            "{report}"
        );
        // `cat` stops at the chunk, and its one error line names the dataset first.
        let out = run(&["cat", s(&damaged), "/gz"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(
            stderr.starts_with(&format!("h5chunk: error: {}: /gz: ", damaged.display()))
                && stderr.contains("fletcher32 checksum mismatch"),
            "{stderr}"
        );
    }
    // Unchecksummed v1 B-tree nodes, symbol table nodes and local heaps: a damaged signature.
    for sig in ["TREE", "SNOD", "HEAP"] {
        let mut bytes = std::fs::read(&earliest).unwrap();
        let at = find(&bytes, sig.as_bytes()).unwrap_or_else(|| panic!("{sig}: not found"));
        bytes[at + 3] ^= 0x20;
        let damaged = dir.join(format!("sig_{sig}.h5"));
        std::fs::write(&damaged, &bytes).unwrap();
        assert_reports(&damaged, sig);
    }
    // Truncated files: the superblock's end of file is past the file's end.
    for file in [&latest, &earliest, &index_fixture] {
        let bytes = std::fs::read(file).unwrap();
        for cut in [bytes.len() - 1, bytes.len() / 2, 600, 40, 0] {
            let damaged = dir.join(format!("cut{cut}.h5"));
            std::fs::write(&damaged, &bytes[..cut]).unwrap();
            assert_reports(&damaged, &format!("{} cut at {cut}", file.display()));
        }
    }
}

#[test]
fn check_reports_an_index_address_past_the_end_of_the_file() {
    let dir = tmp("check_past_eof");
    let (latest, earliest) = written_files(&dir);
    // The v1 B-tree root of a chunk index (node type 1), named by a version 1 object header
    // (no checksum): every copy of its address is moved past the end of the file.
    let mut bytes = std::fs::read(&earliest).unwrap();
    let past = (bytes.len() as u64 + 4096).to_le_bytes();
    let root = (0..bytes.len() - 5)
        .find(|&i| &bytes[i..i + 4] == b"TREE" && bytes[i + 4] == 1)
        .expect("a chunk B-tree node");
    let addr = (root as u64).to_le_bytes();
    let mut patched = 0;
    while let Some(at) = find(&bytes, &addr) {
        bytes[at..at + 8].copy_from_slice(&past);
        patched += 1;
    }
    assert!(patched > 0);
    let damaged = dir.join("btree1_past_eof.h5");
    std::fs::write(&damaged, &bytes).unwrap();
    let report = assert_reports(&damaged, "v1 B-tree root past EOF");
    assert!(report.contains("/g/bt"), "{report}");

    // The extensible array header named by a version 2 object header, whose checksum is
    // recomputed so that only the address is wrong.
    let mut bytes = std::fs::read(&latest).unwrap();
    let past = (bytes.len() as u64 + 4096).to_le_bytes();
    let header = find(&bytes, b"EAHD").unwrap();
    let addr = (header as u64).to_le_bytes();
    let at = find(&bytes, &addr).expect("the layout message's address");
    let ohdr = bytes[..at]
        .windows(4)
        .rposition(|w| w == b"OHDR")
        .expect("an object header before it");
    let len = block_len(&bytes, ohdr).unwrap();
    assert!(
        ohdr + len > at,
        "the address lies in that header's first chunk"
    );
    bytes[at..at + 8].copy_from_slice(&past);
    let sum = lookup3(&bytes[ohdr..ohdr + len - 4]).to_le_bytes();
    bytes[ohdr + len - 4..ohdr + len].copy_from_slice(&sum);
    let damaged = dir.join("earray_past_eof.h5");
    std::fs::write(&damaged, &bytes).unwrap();
    let report = assert_reports(&damaged, "extensible array header past EOF");
    assert!(report.contains("/ea"), "{report}");
    assert!(!report.contains("checksum"), "{report}");
}

/// Fixture `seed` with the bytes of `patch` set, written to `dir/name`.
fn patched_fixture(dir: &Path, seed: &str, patch: &[(usize, u8)], name: &str) -> PathBuf {
    let mut bytes = std::fs::read(fixtures::dir().join(seed)).unwrap();
    for &(at, v) in patch {
        bytes[at] = v;
    }
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

/// Two mutants the fuzz campaign (`cargo xtask fuzz`) found `check` calling clean while `cat`
/// failed, rebuilt from their committed seeds: a contiguous dataset whose storage size runs
/// past the file's end (a size field set to all ones, the object header's checksum
/// recomputed), and an old-style group whose name index (the B-tree over the local heap) no
/// longer finds a member its symbol table lists.
#[test]
fn check_sees_what_cat_trips_on() {
    let dir = tmp("check_fuzz_misses");
    let patched = |seed: &str, patch: &[(usize, u8)]| patched_fixture(&dir, seed, patch, seed);
    let contiguous = patched(
        "userblock_latest.h5",
        &[
            (1109, 0xff),
            (1110, 0xff),
            (1111, 0xff),
            (1112, 0xff),
            (1293, 0x75),
            (1294, 0x01),
            (1295, 0x47),
            (1296, 0xc6),
        ],
    );
    let (code, out, _) = check(&contiguous);
    assert_eq!(code, Some(1), "{out}");
    // The storage size no longer matches the dataspace's bytes (libhdf5's rule, checked when
    // the dataset opens), or else runs past the end of the file.
    assert!(
        out.contains("contiguous storage of 18446744069414584360 bytes for dims [5]")
            || out.contains("runs past the file's end"),
        "{out}"
    );

    let group = patched("userblock_earliest.h5", &[(673, 0x20)]);
    let (code, out, _) = check(&group);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("invalid name offset"), "{out}");
}

/// Mutants on which the 30-minute fuzz campaign made `check` and `cat` abort (allocations of
/// 1.9 GB and 281 TB), rebuilt from their seeds: an implicit index whose dims, through a
/// damaged dataspace, enumerate more chunks than the file holds, and a never-written
/// contiguous dataset whose stored size is huge. Both now end cleanly under a 2 GiB cap.
#[test]
fn fuzz_aborts_stay_fixed() {
    let dir = tmp("fuzz_aborts");
    let patched =
        |seed: &str, patch: &[(usize, u8)], name: &str| patched_fixture(&dir, seed, patch, name);
    let capped = |args: &[&str]| {
        std::process::Command::new("prlimit")
            .arg("--as=2147483648")
            .arg("--")
            .arg(env!("CARGO_BIN_EXE_h5chunk"))
            .args(args)
            .output()
    };
    let implicit = [
        (
            "fill_latest.h5",
            vec![
                (4890, 0o2),
                (5124, 0o262),
                (5125, 0o102),
                (5126, 0o200),
                (5127, 0o44),
            ],
        ),
        (
            "index_latest.h5",
            vec![
                (1272, 0o20),
                (1509, 0o277),
                (1510, 0o366),
                (1511, 0o374),
                (1512, 0o224),
            ],
        ),
    ];
    for (i, (seed, patch)) in implicit.iter().enumerate() {
        let path = patched(seed, patch, &format!("implicit_{i}.h5"));
        let (code, out, err) = check(&path);
        assert_eq!(code, Some(1), "{out}{err}");
        assert!(
            out.contains("implicit chunk storage runs past the end"),
            "{out}"
        );
        if let Ok(o) = capped(&["check", s(&path)]) {
            assert_eq!(
                o.status.code(),
                Some(1),
                "{}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
    }
    let contiguous = patched(
        "fill_latest.h5",
        &[
            (5856, 0o377),
            (5857, 0o377),
            (6040, 0o14),
            (6041, 0o201),
            (6042, 0o55),
            (6043, 0o172),
        ],
        "contiguous_unwritten.h5",
    );
    let out = run(&["cat", s(&contiguous), "/alloc_time/contiguous_unwritten"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    if let Ok(o) = capped(&["cat", s(&contiguous), "/alloc_time/contiguous_unwritten"]) {
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
}

/// `h5chunk ARGS` under a 4 GB address-space limit (`ulimit -v`, as a service or a batch job
/// runs it), where an allocation sized by a hostile file fails instead of being overcommitted.
fn run_limited(args: &[&str]) -> std::process::Output {
    std::process::Command::new("bash")
        .arg("-c")
        .arg("ulimit -v 4000000 && exec \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_h5chunk"))
        .args(args)
        .output()
        .unwrap()
}

/// Datasets that cannot exist (a real file's dataspace or datatype changed, the object
/// header's checksum recomputed: `h5chunk_testkit::mutate`): under a 4 GB address-space limit
/// `check` reports each as a problem, `ls` lists no shape for it, and `cat` refuses it with one
/// error line naming the rule; none aborts on an allocation, panics, or streams fill values
/// for ever.
#[test]
fn impossible_dataspaces_are_errors_under_a_memory_limit() {
    use std::os::unix::process::ExitStatusExt;
    let dir = tmp("impossible");
    let committed = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/libhdf5");
    let mutants = h5chunk_testkit::mutate::impossible(&committed);
    assert!(mutants.len() >= 8);
    for m in mutants {
        let file = dir.join(format!("{}.h5", m.name));
        std::fs::write(&file, &m.bytes).unwrap();
        for args in [
            vec!["ls", s(&file)],
            vec!["check", s(&file)],
            vec!["cat", s(&file), m.dataset.as_str()],
        ] {
            let out = run_limited(&args);
            let stdout = String::from_utf8_lossy(&out.stdout);
            let stderr = String::from_utf8_lossy(&out.stderr);
            let ctx = format!("{} {args:?}: {}\n{stdout}\n{stderr}", m.name, out.status);
            assert_eq!(out.status.signal(), None, "{ctx}");
            assert!(!stderr.contains("memory allocation of"), "{ctx}");
            assert!(!stderr.contains("panicked"), "{ctx}");
            assert_eq!(out.status.code(), Some(1), "{ctx}");
            if args[0] == "ls" {
                // The dataset's shape is not listed: the member's line gives the reason.
                assert!(
                    !stdout
                        .lines()
                        .any(|l| l.starts_with(&format!("{} ", m.dataset)) && l.contains("shape=")),
                    "{ctx}"
                );
                assert!(stdout.contains(m.expect), "{ctx}");
            } else if args[0] == "check" {
                let problem = stdout
                    .lines()
                    .find(|l| l.starts_with("problem: ") && l.contains(&m.dataset))
                    .unwrap_or_else(|| panic!("no problem reported: {ctx}"));
                assert!(problem.contains(m.expect), "{ctx}");
            } else {
                assert_eq!(stderr.lines().count(), 1, "{ctx}");
                // The dataset named first (after the file), once.
                let named = format!("h5chunk: error: {}: {}: ", file.display(), m.dataset);
                assert!(stderr.starts_with(&named), "{ctx}");
                assert_eq!(stderr.matches(m.dataset.as_str()).count(), 1, "{ctx}");
                assert!(stderr.contains(m.expect), "{ctx}");
                assert!(stdout.is_empty(), "{ctx}");
            }
        }
    }
}

/// A chunk of nearly 4 GiB (within libhdf5's limit) never written: `cat` under a 4 GB
/// address-space limit cannot hold its fill values and says so, where it aborted on the
/// allocation ("memory allocation of 4294967292 bytes failed").
#[test]
fn a_fill_chunk_past_memory_is_an_error_under_a_memory_limit() {
    let dir = tmp("fill_chunk_past_memory");
    let path = dir.join("huge_chunk.h5");
    let f = h5chunk::File::create(&path).unwrap();
    f.new_dataset::<u32>()
        .shape(&[0x3fff_ffff])
        .chunk(&[0x3fff_ffff])
        .create("d")
        .unwrap();
    f.close().unwrap();
    let (code, report, _) = check(&path);
    assert_eq!(code, Some(0), "{report}");
    let out = run_limited(&["cat", s(&path), "/d"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{}: {stderr}", out.status);
    assert!(!stderr.contains("memory allocation of"), "{stderr}");
    assert!(
        stderr.contains("a chunk of 4294967292 bytes does not fit in memory"),
        "{stderr}"
    );
}
