//! `h5chunk cat --text`, `--csv` and `--slice`: hyperslabs equal to the same elements of the
//! whole dataset, text on a terminal by default, and every value printed equal to h5py's for a
//! file h5py wrote (numbers, strings, compound fields, n-D blocks).
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used
)]

mod common;

use common::{fails, ok, ok_text, s, tmp};
use h5chunk::File;
use h5chunk_testkit::{fixtures, interop};
use serde_json::Value;

/// A committed fixture's 2-D `<i4` dataset (20 × 30, values 0..600 in C order).
fn chunked_2d() -> std::path::PathBuf {
    fixtures::dir().join("sb0_earliest.h5")
}

#[test]
fn slice_selects_the_hyperslab_of_the_whole_dataset() {
    let file = chunked_2d();
    let f = File::open(&file).unwrap();
    let whole: Vec<i32> = f.dataset("/chunked_2d").unwrap().read().unwrap();
    let at = |r: usize, c: usize| whole[r * 30 + c];
    // Binary: the selected elements, little-endian, C order.
    let raw = ok(&["cat", s(&file), "/chunked_2d", "--slice", "2:17:3,1:29:4"]);
    let mut want = Vec::new();
    for r in (2..17).step_by(3) {
        for c in (1..29).step_by(4) {
            want.extend_from_slice(&at(r, c).to_le_bytes());
        }
    }
    assert_eq!(raw, want);
    // A single index drops its dimension; a negative one counts from the end.
    let col = ok(&["cat", s(&file), "/chunked_2d", "--slice", ":,-1", "--npy"]);
    let header_len = u16::from_le_bytes([col[8], col[9]]) as usize + 10;
    let header = String::from_utf8_lossy(&col[..header_len]);
    assert!(header.contains("'shape': (20,)"), "{header}");
    let values: Vec<i32> = col[header_len..]
        .chunks_exact(4)
        .map(|b| i32::from_le_bytes(b.try_into().unwrap()))
        .collect();
    assert_eq!(values, (0..20).map(|r| at(r, 29)).collect::<Vec<_>>());
    // Text: rows as lines, the same values.
    let text = ok_text(&[
        "cat",
        s(&file),
        "/chunked_2d",
        "--text",
        "--slice",
        "0:3,::7",
    ]);
    let rows: Vec<Vec<i32>> = text
        .lines()
        .map(|l| l.split_whitespace().map(|v| v.parse().unwrap()).collect())
        .collect();
    let want: Vec<Vec<i32>> = (0..3)
        .map(|r| (0..30).step_by(7).map(|c| at(r, c)).collect())
        .collect();
    assert_eq!(rows, want, "{text}");
    // CSV of the whole: 20 lines of 30 fields.
    let csv = ok_text(&["cat", s(&file), "/chunked_2d", "--csv"]);
    let cells: Vec<i32> = csv
        .lines()
        .inspect(|l| assert_eq!(l.split(',').count(), 30, "{l}"))
        .flat_map(|l| {
            l.split(',')
                .map(|v| v.parse::<i32>().unwrap())
                .collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(cells, whole);
}

#[test]
fn slice_errors_are_one_line() {
    let file = chunked_2d();
    for bad in ["0:3,0:3,0:3", "20", "1:5:0", "x"] {
        let err = fails(&["cat", s(&file), "/chunked_2d", "--slice", bad]);
        assert!(err.contains("--slice"), "{bad}: {err}");
    }
    // Formats exclude each other.
    let out = common::run(&["cat", s(&file), "/chunked_2d", "--npy", "--csv"]);
    assert!(!out.status.success());
}

#[test]
fn cat_prints_text_on_a_terminal_and_binary_to_a_pipe() {
    let file = chunked_2d();
    // Through a pipe: little-endian values.
    let piped = ok(&["cat", s(&file), "/chunked_2d", "--slice", "0,0:4"]);
    assert_eq!(
        piped,
        [0i32, 1, 2, 3]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect::<Vec<_>>()
    );
    // On a pseudo-terminal (util-linux's `script`, in Debian's essential set): text.
    let bin = env!("CARGO_BIN_EXE_h5chunk");
    let cmd = format!("{bin} cat {} /chunked_2d --slice 0:2,0:4", s(&file));
    let out = std::process::Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .output();
    let Ok(out) = out else {
        // Not Debian: no `script`, nothing to run the binary on a terminal with.
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED (no `script`): cat_prints_text_on_a_terminal_and_binary_to_a_pipe"
        );
        return;
    };
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout).replace('\r', "");
    assert_eq!(text, " 0   1   2   3\n30  31  32  33\n", "{text:?}");
}

/// The file h5py writes, and h5py's values of each (dataset, slice) as JSON: numbers (NaN and
/// infinities as strings), strings, compound records as lists.
const WRITE: &str = r#"
import h5py, json, math, sys
import numpy as np
path = sys.argv[1]
with h5py.File(path, "w") as f:
    f["f8"] = np.array([0.0, 1.0, -2.5, 1e-30, 6.02e23, np.nan, np.inf, -np.inf, 0.1, 1/3])
    f["f4"] = np.array([0.1, 3.25, -1e10, 7e-8], dtype="<f4")
    f["i2be"] = np.arange(-6, 6, dtype=">i2").reshape(3, 4)
    f.create_dataset("cube", data=np.arange(2 * 3 * 4, dtype="<i4").reshape(2, 3, 4) * 7 - 50,
                     chunks=(1, 2, 2))
    f["fixed"] = np.array([b"abc", b"de", b"", b"q,r"], dtype="S5")
    f.create_dataset("vlen", data=["plain", "with space", 'say "hi", then', "été"],
                     dtype=h5py.string_dtype())
    rec = np.dtype([("id", "<i4"), ("x", "<f8"), ("tag", "S4")])
    f["records"] = np.array([(1, 0.5, b"a"), (2, -1.25, b"bb"), (3, 1e-9, b"c,d")], dtype=rec)
    f["flags"] = np.array([True, False, True])
def plain(v):
    if isinstance(v, bytes):
        return v.decode()
    if isinstance(v, float) and not math.isfinite(v):
        return repr(v)
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    return v
out = {}
with h5py.File(path, "r") as f:
    for name, key in json.loads(sys.argv[2]):
        d = f[name]
        a = d[eval("np.s_[" + key + "]")] if key else d[()]
        if a.dtype.names:
            v = [plain(list(r)) for r in a.tolist()]
        else:
            v = plain(a.tolist())
        out[name + "[" + key + "]"] = v
print(json.dumps(out))
"#;

/// Every value of a (nested) JSON list, flat.
fn flat(v: &Value, out: &mut Vec<Value>) {
    match v {
        Value::Array(a) => a.iter().for_each(|x| flat(x, out)),
        x => out.push(x.clone()),
    }
}

/// One printed value against h5py's: numbers as numbers, NaN and infinities by name, strings
/// as strings. Floats: the printed digits read back as the same `f32` (`single`) or as the
/// same `f64` up to serde_json's last-bit rounding of h5py's digits.
fn same(printed: &str, h5py: &Value, single: bool) -> bool {
    match h5py {
        Value::String(s) if s == "nan" || s == "inf" || s == "-inf" => printed == s,
        Value::String(s) => printed == s,
        Value::Bool(b) => printed == if *b { "TRUE" } else { "FALSE" },
        Value::Number(n) if n.is_f64() => {
            let w = n.as_f64().unwrap();
            if single {
                printed.parse::<f32>().ok() == Some(w as f32)
            } else {
                printed
                    .parse::<f64>()
                    .is_ok_and(|p| (p - w).abs() <= w.abs() * 1e-15)
            }
        }
        Value::Number(n) => printed.parse::<i64>().ok() == n.as_i64(),
        _ => false,
    }
}

/// A quoted text-mode string's text.
fn unquote(v: &str) -> String {
    v.strip_prefix('"')
        .and_then(|v| v.strip_suffix('"'))
        .map_or(v.to_owned(), |v| {
            v.replace("\\\"", "\"").replace("\\\\", "\\")
        })
}

/// CSV fields of one line (quoted fields with doubled quotes).
fn csv_fields(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => out.push(std::mem::take(&mut cur)),
            (c, _) => cur.push(c),
        }
    }
    out.push(cur);
    out
}

#[test]
fn text_and_csv_values_equal_h5py() {
    let Some(python) = interop::python("text_and_csv_values_equal_h5py") else {
        return;
    };
    let dir = tmp("text_and_csv_values_equal_h5py");
    let file = dir.join("values.h5");
    // (dataset, numpy key for h5py, --slice for h5chunk)
    let cases: &[(&str, &str, &str)] = &[
        ("f8", "", ""),
        ("f8", "2:9:3", "2:9:3"),
        ("f4", "", ""),
        ("i2be", "", ""),
        ("i2be", "1:,::2", "1:,::2"),
        ("i2be", "-1", "-1"),
        ("cube", "", ""),
        ("cube", ":,1:,1:4:2", ":,1:,1:4:2"),
        ("cube", "1,:,-1", "1,:,-1"),
        ("fixed", "", ""),
        ("vlen", "", ""),
        ("vlen", "1:3", "1:3"),
        ("records", "", ""),
        ("records", "1:", "1:"),
        ("flags", "", ""),
    ];
    let keys: Vec<(&str, &str)> = cases.iter().map(|&(d, k, _)| (d, k)).collect();
    let said = interop::run_python(
        &python,
        WRITE,
        &[s(&file), &serde_json::to_string(&keys).unwrap()],
    );
    let h5py: Value = serde_json::from_str(said.trim()).unwrap();
    for &(name, key, slice) in cases {
        let want = &h5py[format!("{name}[{key}]")];
        let mut args = vec!["cat", s(&file), name];
        if !slice.is_empty() {
            args.extend(["--slice", slice]);
        }
        let csv = ok_text(&[&args[..], &["--csv"]].concat());
        let text = ok_text(&[&args[..], &["--text"]].concat());
        let what = format!("{name} [{key}]");
        if name == "records" {
            // A table: the field names, then one record a line.
            let mut lines = csv.lines();
            assert_eq!(lines.next(), Some("id,x,tag"), "{what}: {csv}");
            let got: Vec<Vec<String>> = lines.map(csv_fields).collect();
            let want = want.as_array().unwrap();
            assert_eq!(got.len(), want.len(), "{what}: {csv}");
            for (g, w) in got.iter().zip(want) {
                for (g, w) in g.iter().zip(w.as_array().unwrap()) {
                    assert!(
                        same(g, w, name == "f4"),
                        "{what}: csv {g:?} against h5py's {w}"
                    );
                }
            }
            let mut tl = text.lines();
            let head: Vec<&str> = tl.next().unwrap().split_whitespace().collect();
            assert_eq!(head, ["id", "x", "tag"], "{what}: {text}");
            for (line, w) in tl.zip(want) {
                let cells: Vec<&str> = line.split_whitespace().collect();
                for (g, w) in cells.iter().zip(w.as_array().unwrap()) {
                    assert!(
                        same(&unquote(g), w, false),
                        "{what}: text {g:?} against {w}"
                    );
                }
            }
            continue;
        }
        let mut want_flat = Vec::new();
        flat(want, &mut want_flat);
        // CSV: every field, in C order; rows of the last dimension as lines.
        let got: Vec<String> = csv.lines().flat_map(csv_fields).collect();
        assert_eq!(got.len(), want_flat.len(), "{what}: {csv}");
        for (g, w) in got.iter().zip(&want_flat) {
            assert!(
                same(g, w, name == "f4"),
                "{what}: csv {g:?} against h5py's {w}"
            );
        }
        let last = match want {
            Value::Array(a) => match a.first() {
                Some(Value::Array(_)) => None,
                _ => Some(1usize),
            },
            _ => Some(1),
        };
        if let Some(one) = last {
            // One dimension (or a scalar): one value a line.
            assert_eq!(csv.lines().count(), want_flat.len() / one, "{what}: {csv}");
        }
        // Text: the same values (strings quoted), 2-D blocks of a 3-D selection under their
        // headers.
        let mut got = Vec::new();
        let mut headers = Vec::new();
        for line in text.lines().filter(|l| !l.is_empty()) {
            if line.starts_with('[') {
                headers.push(line.to_owned());
                continue;
            }
            if matches!(name, "fixed" | "vlen") {
                // Strings hold spaces: each line is one quoted value here.
                got.push(unquote(line.trim()));
            } else {
                got.extend(line.split_whitespace().map(str::to_owned));
            }
        }
        assert_eq!(got.len(), want_flat.len(), "{what}: {text}");
        for (g, w) in got.iter().zip(&want_flat) {
            assert!(
                same(g, w, name == "f4"),
                "{what}: text {g:?} against h5py's {w}"
            );
        }
        match (name, key) {
            ("cube", "") => assert_eq!(headers, ["[0, :, :]", "[1, :, :]"], "{text}"),
            ("cube", ":,1:,1:4:2") => assert_eq!(headers, ["[0, :, :]", "[1, :, :]"]),
            _ => assert!(headers.is_empty(), "{what}: {text}"),
        }
    }
    // `--npy --slice`: numpy loads what h5py reads for the same key (shape and values; the
    // compound one as a structured array).
    let mut npys = Vec::new();
    for (i, &(name, key, slice)) in cases.iter().enumerate() {
        if name == "vlen" || slice.is_empty() {
            continue;
        }
        let out = ok(&["cat", s(&file), name, "--npy", "--slice", slice]);
        let path = dir.join(format!("{i}.npy"));
        std::fs::write(&path, out).unwrap();
        npys.push((s(&path).to_owned(), name, key));
    }
    let said = interop::run_python(
        &python,
        NPY_SAME,
        &[s(&file), &serde_json::to_string(&npys).unwrap()],
    );
    assert_eq!(said.trim(), format!("{} same", npys.len()), "{said}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Each `.npy` against h5py's value of its (dataset, key): the count of equal ones, or what
/// differs.
const NPY_SAME: &str = r#"
import h5py, json, sys
import numpy as np
same = 0
with h5py.File(sys.argv[1], "r") as f:
    for path, name, key in json.loads(sys.argv[2]):
        got = np.load(path)
        want = f[name][eval("np.s_[" + key + "]")]
        ok = got.shape == want.shape and got.dtype.newbyteorder("=") == want.dtype.newbyteorder("=")
        if ok and want.dtype.names:
            ok = got.tobytes() == want.astype(got.dtype).tobytes()
        elif ok:
            ok = np.array_equal(got, want, equal_nan=want.dtype.kind == "f")
        if ok:
            same += 1
        else:
            print("differs:", name, key, got.dtype, got.shape, want.dtype, want.shape)
print(same, "same")
"#;

#[test]
fn text_of_a_file_h5py_wrote_reads_as_h5dump_would_show_it() {
    // Strings are quoted, a `>i2` dataset prints its values (not its bytes), and a compound
    // dataset is a table: a quick look a person can read.
    let Some(python) = interop::python("text_of_a_file_h5py_wrote") else {
        return;
    };
    let dir = tmp("text_of_a_file_h5py_wrote");
    let file = dir.join("look.h5");
    interop::run_python(&python, WRITE, &[s(&file), "[]"]);
    assert_eq!(
        ok_text(&["cat", s(&file), "vlen", "--text"]),
        "\"plain\"\n\"with space\"\n\"say \\\"hi\\\", then\"\n\"été\"\n"
    );
    assert_eq!(
        ok_text(&["cat", s(&file), "i2be", "--text"]),
        "-6  -5  -4  -3\n-2  -1   0   1\n 2   3   4   5\n"
    );
    assert_eq!(
        ok_text(&["cat", s(&file), "records", "--text"]),
        "id      x  tag\n 1    0.5  \"a\"\n 2  -1.25  \"bb\"\n 3   1e-9  \"c,d\"\n"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
