//! Dense link storage written by h5chunk: a new-style group past its compact limit moves its
//! links into a fractal heap and a v2 B-tree of names, as libhdf5 does. Groups of 10,000 and
//! 100,000 members (appended to again after reopening) are read by h5py and h5dump; libhdf5
//! then adds and deletes members in them, and the file stays sound. h5chunk reads h5py's
//! groups of 100,000 members, in creation order when tracked.
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::time::Instant;

use h5chunk::{Error, File, FileOptions, GroupOptions, Libver, LibverBounds};
use h5chunk_testkit::interop;

/// Prints the header fields of every fractal heap of a file (64-bit offsets and lengths), one
/// line of JSON per heap: the accounting libhdf5 keeps as the heap grows.
const HEAP_STATS: &str = r#"
def heap_stats(path):
    import struct
    b = open(path, "rb").read()
    out, i = [], b.find(b"FRHP")
    while i >= 0:
        p = i + 5 + 9
        v = struct.unpack_from("<12Q", b, p)
        width, start, maxd, bits, start_rows, root, root_rows = struct.unpack_from("<HQQHHQH", b, p + 96)
        out.append(dict(free=v[2], managed=v[4], allocated=v[5], iterator=v[6], objects=v[7],
                        width=width, start=start, max_direct=maxd, bits=bits,
                        start_rows=start_rows, root_rows=root_rows))
        i = b.find(b"FRHP", i + 4)
    return out
"#;

#[test]
fn a_dense_group_h5chunk_writes_is_read_and_changed_by_libhdf5() {
    let Some(python) = interop::python("a_dense_group_h5chunk_writes") else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("h5chunk-dense-w-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("dense.h5");
    let name = |i: usize| format!("member_{i:05}");
    {
        let options = FileOptions {
            bounds: LibverBounds::new(Libver::Latest, Libver::Latest).unwrap(),
            ..FileOptions::default()
        };
        let file = File::create_with(&path, options).unwrap();
        let g = file.create_group("g").unwrap();
        for i in 0..10_000 {
            if i % 1000 == 7 {
                let d = g
                    .new_dataset::<i32>()
                    .shape(&[1])
                    .chunk(&[1])
                    .create(&name(i))
                    .unwrap();
                d.write(&[i as i32]).unwrap();
            } else {
                g.create_group(&name(i)).unwrap();
            }
        }
        // A name already there: refused, as before.
        assert!(matches!(
            g.create_group(&name(42)),
            Err(Error::Exists { .. })
        ));
        assert!(g.contains(&name(9_999)).unwrap());
        file.close().unwrap();
    }
    // Reopened: more members go into the same heap.
    {
        let file = File::open_rw(&path).unwrap();
        let g = file.group("g").unwrap();
        for i in 10_000..10_500 {
            g.create_group(&name(i)).unwrap();
        }
        assert_eq!(g.members().unwrap().len(), 10_500);
        file.close().unwrap();
    }
    let report = File::open(&path).unwrap().check();
    assert!(report.is_clean(), "{report:?}");
    let out = interop::run_python(
        &python,
        r#"
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    g = f["g"]
    names = list(g)
    print(len(names), names == sorted(names), names[0], names[-1], int(g["member_03007"][0]))
with h5py.File(sys.argv[1], "r+") as f:
    g = f["g"]
    g.create_group("added_by_libhdf5")
    del g["member_00100"]
with h5py.File(sys.argv[1], "r") as f:
    print(len(f["g"]), "added_by_libhdf5" in f["g"], "member_00100" in f["g"])
"#,
        &[path.to_str().unwrap()],
    );
    let mut lines = out.lines();
    assert_eq!(
        lines.next().unwrap(),
        "10500 True member_00000 member_10499 3007"
    );
    assert_eq!(lines.next().unwrap(), "10500 True False");
    if let Some(h5dump) = interop::h5dump("a_dense_group_h5chunk_writes") {
        interop::h5dump_ok(&h5dump, &path);
    }
    // After libhdf5's changes: h5chunk reads them, and the file is sound.
    let file = File::open(&path).unwrap();
    let report = file.check();
    assert!(report.is_clean(), "{report:?}");
    let g = file.group("g").unwrap();
    assert!(g.contains("added_by_libhdf5").unwrap());
    assert!(!g.contains("member_00100").unwrap());
    assert_eq!(g.members().unwrap().len(), 10_500);
    drop((g, file));
    // libhdf5 laid free space out its own way (a free-space manager): h5chunk adds past it.
    {
        let file = File::open_rw(&path).unwrap();
        file.group("g")
            .unwrap()
            .create_group("after_libhdf5")
            .unwrap();
        file.close().unwrap();
    }
    let file = File::open(&path).unwrap();
    assert!(file.check().is_clean());
    assert_eq!(file.group("g").unwrap().members().unwrap().len(), 10_501);
    drop(file);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Attributes past libhdf5's compact limit (8) move to dense storage as libhdf5 moves them:
/// 100 attributes on a dataset and on a group (numbers and strings), some replaced and some
/// deleted after the move, read by h5py; then libhdf5 adds and deletes some, and h5chunk reads
/// what it left.
#[test]
fn a_hundred_attributes_go_dense_and_h5py_reads_them() {
    let Some(python) = interop::python("a_hundred_attributes_go_dense") else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("h5chunk-dense-attrs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("attrs.h5");
    {
        let options = FileOptions {
            bounds: LibverBounds::new(Libver::V110, Libver::Latest).unwrap(),
            ..FileOptions::default()
        };
        let file = File::create_with(&path, options).unwrap();
        let d = file
            .new_dataset::<f64>()
            .shape(&[2])
            .chunk(&[2])
            .create("d")
            .unwrap();
        let g = file.create_group("g").unwrap();
        for i in 0..100 {
            d.attrs()
                .set_scalar(&format!("n{i:03}"), f64::from(i) * 0.5)
                .unwrap();
            g.attrs()
                .set_str(&format!("s{i:03}"), &format!("text {i}"))
                .unwrap();
        }
        // Replaced and deleted once dense.
        d.attrs().set("n007", &[1i32, 2, 3]).unwrap();
        d.attrs().delete("n050").unwrap();
        g.attrs().set_str("s099", "changed").unwrap();
        assert!(matches!(
            d.attrs().delete("n050"),
            Err(Error::NoAttribute { .. })
        ));
        assert_eq!(d.attrs().all().unwrap().len(), 99);
        assert_eq!(d.attr("n007").unwrap().values::<i32>().unwrap(), [1, 2, 3]);
        file.close().unwrap();
    }
    let report = File::open(&path).unwrap().check();
    assert!(report.is_clean(), "{report:?}");
    // Two fractal heaps and two type-8 name indexes: both objects went dense.
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(bytes.windows(4).filter(|w| w == b"FRHP").count(), 2);
    let out = interop::run_python(
        &python,
        r#"
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    d, g = f["d"].attrs, f["g"].attrs
    print(len(d), len(g), d["n001"], list(d["n007"]), "n050" in d, g["s099"], g["s042"])
with h5py.File(sys.argv[1], "r+") as f:
    f["d"].attrs["from_libhdf5"] = 42
    del f["d"].attrs["n002"]
"#,
        &[path.to_str().unwrap()],
    );
    let mut lines = out.lines();
    assert_eq!(
        lines.next().unwrap(),
        "99 100 0.5 [np.int32(1), np.int32(2), np.int32(3)] False changed text 42"
    );
    if let Some(h5dump) = interop::h5dump("a_hundred_attributes_go_dense") {
        interop::h5dump_ok(&h5dump, &path);
    }
    let file = File::open(&path).unwrap();
    let d = file.dataset("d").unwrap();
    assert_eq!(d.attr("from_libhdf5").unwrap().value::<i64>().unwrap(), 42);
    assert!(d.attr("n002").is_err());
    assert_eq!(d.attrs().all().unwrap().len(), 99);
    assert!(file.check().is_clean());
    drop((d, file));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Links added to a group that tracks link creation order carry the next creation index, so
/// h5py lists them in the order they were made, after its own; past eight members the group
/// goes dense with a creation-order index, and libhdf5 goes on adding to it. A group made with
/// h5py's `track_order=True` (whose header also tracks attribute creation order, so every
/// header message carries a creation order field) takes links the same way.
#[test]
fn links_added_to_a_tracked_group_keep_their_creation_order() {
    let Some(python) = interop::python("links_added_to_a_tracked_group") else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("h5chunk-tracked-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("tracked.h5");
    let run = |script: &str| interop::run_python(&python, script, &[path.to_str().unwrap()]);
    run(r#"
import sys, h5py
with h5py.File(sys.argv[1], "w", libver="latest") as f:
    gcpl = h5py.h5p.create(h5py.h5p.GROUP_CREATE)
    gcpl.set_link_creation_order(h5py.h5p.CRT_ORDER_TRACKED | h5py.h5p.CRT_ORDER_INDEXED)
    h5py.h5g.create(f.id, b"t", gcpl=gcpl)
    g = f["t"]
    for n in ["zeta", "alpha", "mu"]:
        g.create_group(n)
    b = f.create_group("both", track_order=True)
    b.create_group("py1")
    b.attrs["x"] = 1
"#);
    {
        let file = File::open_rw(&path).unwrap();
        let g = file.group("t").unwrap();
        for n in ["omega", "beta", "kappa", "a1", "a2", "a3", "a4", "a5", "a6"] {
            g.create_group(n).unwrap();
        }
        // h5py's track_order=True: the header tracks attribute order too.
        let both = file.group("both").unwrap();
        for n in ["z", "y", "x"] {
            both.create_group(n).unwrap();
        }
        both.attrs().set_scalar("w", 2i64).unwrap();
        let ours: Vec<String> = (g.members_in_creation_order().unwrap().into_iter())
            .map(|(n, _)| n)
            .collect();
        assert_eq!(
            ours,
            [
                "zeta", "alpha", "mu", "omega", "beta", "kappa", "a1", "a2", "a3", "a4", "a5", "a6"
            ]
        );
        file.close().unwrap();
    }
    let out = run(r#"
import sys, h5py
with h5py.File(sys.argv[1], "r+") as f:
    f["t"].create_group("last")
    f["both"].create_group("last")
with h5py.File(sys.argv[1], "r") as f:
    print(" ".join(f["t"]))
    print(" ".join(f["both"]), dict(f["both"].attrs))
"#);
    let mut lines = out.lines();
    assert_eq!(
        lines.next().unwrap(),
        "zeta alpha mu omega beta kappa a1 a2 a3 a4 a5 a6 last"
    );
    assert_eq!(
        lines.next().unwrap(),
        "py1 z y x last {'x': np.int64(1), 'w': np.int64(2)}"
    );
    assert!(File::open(&path).unwrap().check().is_clean());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A member name of 40 characters: 100,000 links of 51 bytes fill 5 MB of heap, past the
/// root's direct rows (512 KiB) and past its rows of child indirect blocks that hold direct
/// blocks only (4 MiB), into children that hold indirect blocks of their own.
///
/// Among 100,000 names two are likely to share a lookup3 hash (about 1.2 pairs are expected):
/// these have a pair, whose records h5chunk orders by name as libhdf5 does.
fn long_name(i: usize) -> String {
    format!("member_{i:06}_{}", "x".repeat(26))
}

/// h5chunk makes a group of 100,000 members (99,500, then 500 more after reopening): its
/// heap's header says what libhdf5's says for the same links (blocks, root rows, iterator,
/// free and managed space); h5py lists every name and opens members; h5dump lists them;
/// libhdf5 adds and deletes members; h5chunk reads the result and `check` finds it sound.
#[test]
fn a_group_of_100000_members_h5chunk_writes_is_read_and_changed_by_libhdf5() {
    let Some(python) = interop::python("a_group_of_100000_members_h5chunk_writes") else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("h5chunk-dense-100k-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("big.h5");
    let reference = dir.join("reference.h5");
    let n = 100_000;
    let started = Instant::now();
    {
        let options = FileOptions {
            bounds: LibverBounds::new(Libver::Latest, Libver::Latest).unwrap(),
            ..FileOptions::default()
        };
        let file = File::create_with(&path, options).unwrap();
        let g = file.create_group("g").unwrap();
        for i in 0..n / 2 {
            g.create_group(&long_name(i)).unwrap();
        }
        let half = started.elapsed();
        for i in n / 2..n - 500 {
            g.create_group(&long_name(i)).unwrap();
        }
        // Linear, not quadratic: the second half costs about what the first did.
        eprintln!(
            "first 50,000 members in {half:?}, next 49,500 in {:?}",
            started.elapsed() - half
        );
        file.close().unwrap();
    }
    let written = started.elapsed();
    {
        let file = File::open_rw(&path).unwrap();
        let g = file.group("g").unwrap();
        for i in n - 500..n {
            g.create_group(&long_name(i)).unwrap();
        }
        assert!(matches!(
            g.create_group(&long_name(4242)),
            Err(Error::Exists { .. })
        ));
        file.close().unwrap();
    }
    let listed = Instant::now();
    {
        let file = File::open(&path).unwrap();
        let members = file.group("g").unwrap().members().unwrap();
        assert_eq!(members.len(), n);
        assert!(
            members
                .iter()
                .enumerate()
                .all(|(i, (m, _))| *m == long_name(i))
        );
    }
    eprintln!(
        "100,000 members: written in {written:?}, listed in {:?}",
        listed.elapsed()
    );
    // The names that share a hash: both found, by h5chunk and by libhdf5.
    let mut seen = std::collections::HashMap::new();
    let same_hash: Vec<usize> = (0..n)
        .filter_map(|i| {
            let hash = h5chunk_format::checksum::lookup3(long_name(i).as_bytes());
            seen.insert(hash, i).map(|j| [j, i])
        })
        .flatten()
        .collect();
    assert!(!same_hash.is_empty());
    {
        let file = File::open(&path).unwrap();
        let g = file.group("g").unwrap();
        for &i in &same_hash {
            assert!(g.group(&long_name(i)).is_ok(), "{}", long_name(i));
        }
    }
    let same_hash = serde_json::to_string(&same_hash).unwrap();
    let t = Instant::now();
    let script = format!(
        "{HEAP_STATS}{}",
        r#"
import sys, json, h5py
path, reference, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
same_hash = json.loads(sys.argv[4])
name = lambda i: f"member_{i:06}_" + "x" * 26
with h5py.File(path, "r") as f:
    g = f["g"]
    names = list(g)
    print(len(names), names == [name(i) for i in range(n)])
    print(all(isinstance(g[name(i)], h5py.Group) for i in list(range(0, n, 997)) + same_hash))
# The same links made by libhdf5 (hard links to one group: the same 51-byte messages).
with h5py.File(reference, "w", libver="latest") as f:
    g, t = f.create_group("g"), f.create_group("t")
    for i in range(n):
        g[name(i)] = t
ours, theirs = heap_stats(path), heap_stats(reference)
print(ours == theirs, ours)
with h5py.File(path, "r+") as f:
    g = f["g"]
    for i in range(100):
        g.create_group(f"added_by_libhdf5_{i}")
        del g[name(i * 7)]
with h5py.File(path, "r") as f:
    g = f["g"]
    print(len(g), "added_by_libhdf5_99" in g, name(693) in g, name(694) in g)
"#
    );
    let out = interop::run_python(
        &python,
        &script,
        &[
            path.to_str().unwrap(),
            reference.to_str().unwrap(),
            &n.to_string(),
            &same_hash,
        ],
    );
    eprintln!(
        "h5py (reading, the reference heap, changes) in {:?}",
        t.elapsed()
    );
    let mut lines = out.lines();
    assert_eq!(lines.next().unwrap(), "100000 True");
    assert_eq!(lines.next().unwrap(), "True");
    let same = lines.next().unwrap();
    assert!(same.starts_with("True "), "libhdf5's heap differs: {same}");
    // 16 root rows: rows 9 to 15 hold child indirect blocks.
    assert!(same.contains("'root_rows': 16"), "{same}");
    assert_eq!(lines.next().unwrap(), "100000 True False True");
    if let Some(h5dump) = interop::h5dump("a_group_of_100000_members_h5chunk_writes") {
        let out = std::process::Command::new(h5dump)
            .arg("-n")
            .arg(&path)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let listing = String::from_utf8_lossy(&out.stdout);
        assert_eq!(listing.matches(" /g/member_").count(), n - 100);
        assert_eq!(listing.matches(" /g/added_by_libhdf5_").count(), 100);
    }
    // After libhdf5's changes: h5chunk reads them, and the file is sound.
    {
        let file = File::open(&path).unwrap();
        let report = file.check();
        assert!(report.is_clean(), "{report:?}");
        let g = file.group("g").unwrap();
        assert!(g.contains("added_by_libhdf5_0").unwrap());
        assert!(!g.contains(&long_name(7)).unwrap());
        assert!(g.contains(&long_name(8)).unwrap());
        assert_eq!(g.members().unwrap().len(), n);
    }
    // libhdf5 keeps a free-space manager now: h5chunk adds past the space it lists.
    {
        let file = File::open_rw(&path).unwrap();
        file.group("g")
            .unwrap()
            .create_group("after_libhdf5")
            .unwrap();
        file.close().unwrap();
    }
    let file = File::open(&path).unwrap();
    assert!(file.check().is_clean());
    assert_eq!(file.group("g").unwrap().members().unwrap().len(), n + 1);
    drop(file);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// h5py writes two groups of 100,000 members (libver='latest'): one plain, one tracking
/// creation order, its members made in an order other than their names'. h5chunk lists both
/// (by name, and the second in creation order as h5py does) and follows their links.
#[test]
fn groups_of_100000_members_h5py_writes_are_read_in_name_and_creation_order() {
    let Some(python) = interop::python("groups_of_100000_members_h5py_writes") else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("h5chunk-dense-100k-r-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("h5py.h5");
    let n = 100_000usize;
    // Creation order: i * 7919 mod n runs through every number below n once.
    let created = |i: usize| format!("o{:06}", i * 7919 % n);
    let out = interop::run_python(
        &python,
        r#"
import sys, h5py
path, n = sys.argv[1], int(sys.argv[2])
with h5py.File(path, "w", libver="latest") as f:
    t = f.create_group("t")
    plain, ordered = f.create_group("plain"), f.create_group("ordered", track_order=True)
    for i in range(n):
        plain[f"n{i:06}"] = t
        ordered[f"o{i * 7919 % n:06}"] = t
with h5py.File(path, "r") as f:
    o = list(f["ordered"])
    print(len(f["plain"]), len(o), o[:3])
"#,
        &[path.to_str().unwrap(), &n.to_string()],
    );
    assert_eq!(
        out.trim(),
        "100000 100000 ['o000000', 'o007919', 'o015838']"
    );
    let started = Instant::now();
    let file = File::open(&path).unwrap();
    let t = file.group("t").unwrap().object_address();
    let plain = file.group("plain").unwrap();
    let names = plain.members().unwrap();
    assert_eq!(names.len(), n);
    assert!(
        names
            .iter()
            .enumerate()
            .all(|(i, (m, _))| *m == format!("n{i:06}"))
    );
    let ordered = file.group("ordered").unwrap();
    assert!(ordered.tracks_creation_order().unwrap());
    let as_created = ordered.members_in_creation_order().unwrap();
    assert_eq!(as_created.len(), n);
    assert!(
        as_created
            .iter()
            .enumerate()
            .all(|(i, (m, _))| *m == created(i))
    );
    let by_name = ordered.members().unwrap();
    assert!(
        by_name
            .iter()
            .enumerate()
            .all(|(i, (m, _))| *m == format!("o{i:06}"))
    );
    for i in (0..n).step_by(4999) {
        assert_eq!(
            file.group(&format!("plain/n{i:06}"))
                .unwrap()
                .object_address(),
            t
        );
        assert_eq!(
            file.group(&format!("ordered/{}", created(i)))
                .unwrap()
                .object_address(),
            t
        );
    }
    assert!(!plain.contains("n100000").unwrap());
    // Two names of one lookup3 hash in each group (n008595 and n098836, o008380 and
    // o083401): libhdf5 orders their records by name; both are found.
    for name in [
        "plain/n008595",
        "plain/n098836",
        "ordered/o008380",
        "ordered/o083401",
    ] {
        assert_eq!(file.group(name).unwrap().object_address(), t, "{name}");
    }
    eprintln!("h5py's 2 x 100,000 members read in {:?}", started.elapsed());
    let report = file.check();
    assert!(report.is_clean(), "{report:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `pairs` pairs of names `{prefix}{i:07}` whose lookup3 hashes (libhdf5's name hash) are
/// equal, found by brute force: among n names about n² / 2³³ pairs share a hash, so a few
/// hundred thousand names give a few pairs. Each pair in name order.
fn colliding_pairs(prefix: &str, pairs: usize) -> Vec<(String, String)> {
    let mut seen = std::collections::HashMap::new();
    let mut out = Vec::new();
    for i in 0u32.. {
        let name = format!("{prefix}{i:07}");
        let hash = h5chunk_format::checksum::lookup3(name.as_bytes());
        if let Some(earlier) = seen.insert(hash, name.clone()) {
            out.push((earlier, name));
            if out.len() == pairs {
                break;
            }
        }
    }
    out
}

/// Names of one lookup3 hash in a dense group h5chunk writes: their records are ordered by
/// name, as libhdf5 orders them (two pairs among the links that move into dense storage
/// together, two added one by one, the larger name first or second). h5py finds each by
/// name and h5dump lists them; libhdf5 deletes one name of a pair and adds the second name
/// of another next to the first; h5chunk reads the result, and `check` (which also checks
/// that names of one hash are in name order) finds it sound.
#[test]
fn names_of_one_hash_in_a_dense_group_are_ordered_as_libhdf5_orders_them() {
    let Some(python) = interop::python("names_of_one_hash_in_a_dense_group") else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("h5chunk-dense-hash-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("hash.h5");
    let pairs = colliding_pairs("link_", 4);
    // The order h5chunk adds them in: 6 others, pair 0 (larger first) then pair 1's first
    // name (the ninth link: the move to dense storage), pair 1's second, pair 2 (larger
    // first), 20 others, pair 3's first name (libhdf5 adds its second).
    let mut order: Vec<String> = (0..6).map(|i| format!("other_{i:02}")).collect();
    order.extend([pairs[0].1.clone(), pairs[0].0.clone(), pairs[1].0.clone()]);
    order.extend([pairs[1].1.clone(), pairs[2].1.clone(), pairs[2].0.clone()]);
    order.extend((6..26).map(|i| format!("other_{i:02}")));
    order.push(pairs[3].0.clone());
    {
        let options = FileOptions {
            bounds: LibverBounds::new(Libver::Latest, Libver::Latest).unwrap(),
            ..FileOptions::default()
        };
        let file = File::create_with(&path, options).unwrap();
        let g = file.create_group("g").unwrap();
        for (i, name) in order.iter().enumerate() {
            let d = g
                .new_dataset::<i32>()
                .shape(&[1])
                .chunk(&[1])
                .create(name)
                .unwrap();
            d.write(&[i as i32]).unwrap();
        }
        // A name already there is refused, though another of its hash is there too.
        assert!(matches!(
            g.create_group(&pairs[2].0),
            Err(Error::Exists { .. })
        ));
        assert!(!g.contains(&pairs[3].1).unwrap());
        file.close().unwrap();
    }
    {
        let file = File::open(&path).unwrap();
        let report = file.check();
        assert!(report.is_clean(), "{report:?}");
        let g = file.group("g").unwrap();
        for (i, name) in order.iter().enumerate() {
            assert_eq!(g.dataset(name).unwrap().read::<i32>().unwrap(), [i as i32]);
        }
        let mut sorted = order.clone();
        sorted.sort();
        let members: Vec<String> = g.members().unwrap().into_iter().map(|m| m.0).collect();
        assert_eq!(members, sorted);
    }
    let out = interop::run_python(
        &python,
        r#"
import sys, json, h5py
path, order, pairs = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
with h5py.File(path, "r") as f:
    g = f["g"]
    print(list(g) == sorted(order), all(int(g[n][0]) == i for i, n in enumerate(order)))
with h5py.File(path, "r+") as f:
    g = f["g"]
    del g[pairs[0][0]]
    g.create_group(pairs[3][1])
with h5py.File(path, "r") as f:
    g = f["g"]
    print(len(g), pairs[0][0] in g, pairs[0][1] in g, isinstance(g[pairs[3][1]], h5py.Group))
"#,
        &[
            path.to_str().unwrap(),
            &serde_json::to_string(&order).unwrap(),
            &serde_json::to_string(&pairs).unwrap(),
        ],
    );
    let mut lines = out.lines();
    assert_eq!(lines.next().unwrap(), "True True");
    assert_eq!(
        lines.next().unwrap(),
        format!("{} False True True", order.len())
    );
    if let Some(h5dump) = interop::h5dump("names_of_one_hash_in_a_dense_group") {
        let out = std::process::Command::new(h5dump)
            .arg("-n")
            .arg(&path)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let listing = String::from_utf8_lossy(&out.stdout);
        for (a, b) in &pairs[1..] {
            assert!(listing.contains(&format!(" /g/{a}\n")), "{listing}");
            assert!(listing.contains(&format!(" /g/{b}\n")), "{listing}");
        }
    }
    let file = File::open(&path).unwrap();
    let report = file.check();
    assert!(report.is_clean(), "{report:?}");
    let g = file.group("g").unwrap();
    assert!(!g.contains(&pairs[0].0).unwrap());
    assert_eq!(g.dataset(&pairs[0].1).unwrap().read::<i32>().unwrap(), [6]);
    assert!(g.group(&pairs[3].1).is_ok());
    assert_eq!(
        g.dataset(&pairs[3].0).unwrap().read::<i32>().unwrap(),
        [order.len() as i32 - 1]
    );
    assert_eq!(g.members().unwrap().len(), order.len());
    drop((g, file));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Attribute names of one lookup3 hash on one object, in dense storage h5chunk writes: a
/// pair among the attributes that move there together, two added one by one; h5chunk
/// replaces one name of a pair and deletes one name of another (the other stays). h5py reads
/// every attribute by name; libhdf5 deletes one name of a pair and adds back the one h5chunk
/// deleted; h5chunk reads the result and `check` finds it sound.
#[test]
fn attribute_names_of_one_hash_are_ordered_as_libhdf5_orders_them() {
    let Some(python) = interop::python("attribute_names_of_one_hash") else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("h5chunk-dense-ahash-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("ahash.h5");
    let pairs = colliding_pairs("attr_", 3);
    let mut order: Vec<String> = (0..6).map(|i| format!("other_{i:02}")).collect();
    order.extend([pairs[0].1.clone(), pairs[0].0.clone(), pairs[1].0.clone()]);
    order.extend([pairs[1].1.clone(), pairs[2].1.clone(), pairs[2].0.clone()]);
    order.extend((6..12).map(|i| format!("other_{i:02}")));
    let mut want: std::collections::BTreeMap<String, i64> = (order.iter().enumerate())
        .map(|(i, n)| (n.clone(), i as i64))
        .collect();
    {
        let options = FileOptions {
            bounds: LibverBounds::new(Libver::V110, Libver::Latest).unwrap(),
            ..FileOptions::default()
        };
        let file = File::create_with(&path, options).unwrap();
        let d = file
            .new_dataset::<f64>()
            .shape(&[1])
            .chunk(&[1])
            .create("d")
            .unwrap();
        for (i, name) in order.iter().enumerate() {
            d.attrs().set_scalar(name, i as i64).unwrap();
        }
        // Replaced: the record of this name, not its partner's.
        d.attrs().set_scalar(&pairs[0].0, 1000i64).unwrap();
        want.insert(pairs[0].0.clone(), 1000);
        // Deleted: its partner stays.
        d.attrs().delete(&pairs[1].0).unwrap();
        want.remove(&pairs[1].0);
        assert!(matches!(
            d.attrs().delete(&pairs[1].0),
            Err(Error::NoAttribute { .. })
        ));
        for (name, v) in &want {
            assert_eq!(d.attr(name).unwrap().value::<i64>().unwrap(), *v, "{name}");
        }
        assert_eq!(d.attrs().all().unwrap().len(), want.len());
        file.close().unwrap();
    }
    let report = File::open(&path).unwrap().check();
    assert!(report.is_clean(), "{report:?}");
    let out = interop::run_python(
        &python,
        r#"
import sys, json, h5py
path, want, pairs = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
with h5py.File(path, "r") as f:
    a = f["d"].attrs
    print(sorted(a.keys()) == sorted(want), all(int(a[n]) == v for n, v in want.items()),
          pairs[1][0] in a, pairs[1][1] in a)
with h5py.File(path, "r+") as f:
    a = f["d"].attrs
    del a[pairs[2][1]]
    a[pairs[1][0]] = 77
with h5py.File(path, "r") as f:
    a = f["d"].attrs
    print(len(a), pairs[2][1] in a, int(a[pairs[2][0]]), int(a[pairs[1][0]]), int(a[pairs[1][1]]))
"#,
        &[
            path.to_str().unwrap(),
            &serde_json::to_string(&want).unwrap(),
            &serde_json::to_string(&pairs).unwrap(),
        ],
    );
    let mut lines = out.lines();
    assert_eq!(lines.next().unwrap(), "True True False True");
    let (p2, p1) = (want[&pairs[2].0], want[&pairs[1].1]);
    assert_eq!(
        lines.next().unwrap(),
        format!("{} False {p2} 77 {p1}", want.len())
    );
    let file = File::open(&path).unwrap();
    let report = file.check();
    assert!(report.is_clean(), "{report:?}");
    let d = file.dataset("d").unwrap();
    assert!(d.attr(&pairs[2].1).is_err());
    assert_eq!(d.attr(&pairs[2].0).unwrap().value::<i64>().unwrap(), p2);
    assert_eq!(d.attr(&pairs[1].0).unwrap().value::<i64>().unwrap(), 77);
    assert_eq!(d.attr(&pairs[1].1).unwrap().value::<i64>().unwrap(), p1);
    assert_eq!(d.attrs().all().unwrap().len(), want.len());
    drop((d, file));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A group that tracks and indexes creation order (made by h5py, 3 links) grows past 8 links
/// in h5chunk: its links move to dense storage with a creation-order index (v2 B-tree type
/// 6) beside the name index, and later links (also after reopening) carry the next creation
/// index and get a record in both. h5py lists them in the order made, through that index;
/// libhdf5 adds one and deletes one of h5chunk's (from both indexes); h5chunk lists the result
/// in creation order and `check` finds it sound.
#[test]
fn links_added_to_a_dense_tracked_group_are_indexed_by_creation_order() {
    let Some(python) = interop::python("links_added_to_a_dense_tracked_group") else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("h5chunk-dense-crt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("crt.h5");
    let run = |script: &str| interop::run_python(&python, script, &[path.to_str().unwrap()]);
    run(r#"
import sys, h5py
with h5py.File(sys.argv[1], "w", libver="latest") as f:
    gcpl = h5py.h5p.create(h5py.h5p.GROUP_CREATE)
    gcpl.set_link_creation_order(h5py.h5p.CRT_ORDER_TRACKED | h5py.h5p.CRT_ORDER_INDEXED)
    h5py.h5g.create(f.id, b"t", gcpl=gcpl)
    for n in ["zeta", "alpha", "mu"]:
        f["t"].create_group(n)
"#);
    let ours: Vec<String> = (0..45).map(|i| format!("c{:02}", 44 - i)).collect();
    {
        let file = File::open_rw(&path).unwrap();
        let g = file.group("t").unwrap();
        for n in &ours[..40] {
            g.create_group(n).unwrap();
        }
        file.close().unwrap();
    }
    {
        let file = File::open_rw(&path).unwrap();
        let g = file.group("t").unwrap();
        for n in &ours[40..] {
            g.create_group(n).unwrap();
        }
        file.close().unwrap();
    }
    let mut want: Vec<String> = ["zeta", "alpha", "mu"].map(String::from).to_vec();
    want.extend(ours.iter().cloned());
    {
        let file = File::open(&path).unwrap();
        let report = file.check();
        assert!(report.is_clean(), "{report:?}");
        let g = file.group("t").unwrap();
        let listed: Vec<String> = (g.members_in_creation_order().unwrap().into_iter())
            .map(|(n, _)| n)
            .collect();
        assert_eq!(listed, want);
    }
    // Dense now: one fractal heap, two v2 B-trees (names, creation order).
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(bytes.windows(4).filter(|w| w == b"FRHP").count(), 1);
    assert_eq!(bytes.windows(4).filter(|w| w == b"BTHD").count(), 2);
    let out = run(r#"
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    print(" ".join(f["t"]))
with h5py.File(sys.argv[1], "r+") as f:
    f["t"].create_group("last")
    del f["t"]["c20"]
with h5py.File(sys.argv[1], "r") as f:
    print(" ".join(f["t"]))
"#);
    let mut lines = out.lines();
    assert_eq!(lines.next().unwrap(), want.join(" "));
    want.retain(|n| n != "c20");
    want.push("last".into());
    assert_eq!(lines.next().unwrap(), want.join(" "));
    let file = File::open(&path).unwrap();
    let report = file.check();
    assert!(report.is_clean(), "{report:?}");
    let listed: Vec<String> = (file.group("t").unwrap().members_in_creation_order())
        .unwrap()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(listed, want);
    drop(file);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Dense storage libhdf5 made (a free-space manager, holes left by deleted members) takes
/// h5chunk's links and attributes in new heap blocks, which the manager does not list: libhdf5
/// then adds 200 more of each, filling its own free space and growing the heap past h5chunk's
/// blocks, and every link and attribute still reads right in h5py and h5chunk; h5chunk then
/// adds again after libhdf5.
#[test]
fn links_and_attributes_added_to_libhdf5_dense_storage_survive_libhdf5_adding_more() {
    let Some(python) = interop::python("added_to_libhdf5_dense_storage") else {
        return;
    };
    let started = Instant::now();
    let dir = std::env::temp_dir().join(format!("h5chunk-dense-fsm-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("fsm.h5");
    let run = |script: &str| interop::run_python(&python, script, &[path.to_str().unwrap()]);
    run(r#"
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "w", libver="latest") as f:
    g = f.create_group("g")
    for i in range(20):
        g.create_group("py%02d" % i)
    d = f.create_dataset("d", data=np.arange(4))
    for i in range(20):
        d.attrs["pa%02d" % i] = np.arange(i + 1, dtype="i4")
with h5py.File(sys.argv[1], "r+") as f:
    for i in (3, 4, 11):
        del f["g"]["py%02d" % i]
        del f["d"].attrs["pa%02d" % i]
"#);
    let bytes = std::fs::read(&path).unwrap();
    assert!(
        bytes.windows(4).any(|w| w == b"FSHD"),
        "libhdf5 kept no free-space manager"
    );
    let ours = |i: usize| format!("h5chunk_link_{i:03}");
    let attr = |i: usize| format!("h5chunk_attr_{i:03}");
    let values = |i: usize| {
        (0..(i % 7 + 1) as i64)
            .map(|v| v * 1000 + i as i64)
            .collect::<Vec<_>>()
    };
    // Two sessions, then twenty of one each: each opens the heaps again, and goes on filling
    // the newest block when it is h5chunk's (the manager lists nothing in it), so sessions
    // of one link do not cost a block each.
    let blocks = |path: &std::path::Path| {
        let b = std::fs::read(path).unwrap();
        b.windows(4).filter(|w| w == b"FHDB").count()
    };
    let mut before_single = 0;
    for range in [0..30, 30..45]
        .into_iter()
        .chain((45..65).map(|i| i..i + 1))
    {
        if range.start == 45 {
            before_single = blocks(&path);
        }
        let file = File::open_rw(&path).unwrap();
        let g = file.group("g").unwrap();
        let d = file.dataset("d").unwrap();
        for i in range {
            g.create_group(&ours(i)).unwrap();
            d.attrs().set(&attr(i), &values(i)).unwrap();
        }
        file.close().unwrap();
    }
    assert!(
        blocks(&path) <= before_single + 4,
        "{} direct blocks after 20 sessions of one, {before_single} before",
        blocks(&path)
    );
    let check_ours = |file: &File, links: usize| {
        let report = file.check();
        assert!(report.is_clean(), "{report:?}");
        let g = file.group("g").unwrap();
        let d = file.dataset("d").unwrap();
        for i in 0..65 {
            assert!(g.group(&ours(i)).is_ok(), "{}", ours(i));
            assert_eq!(
                d.attr(&attr(i)).unwrap().values::<i64>().unwrap(),
                values(i)
            );
        }
        for i in [0usize, 5, 19] {
            let a = d.attr(&format!("pa{i:02}")).unwrap();
            assert_eq!(
                a.values::<i32>().unwrap(),
                (0..=i as i32).collect::<Vec<_>>()
            );
        }
        assert_eq!(g.members().unwrap().len(), links);
    };
    check_ours(&File::open(&path).unwrap(), 17 + 65);
    let out = run(r#"
import sys, h5py, numpy as np
def verify(f, extra):
    g, a = f["g"], f["d"].attrs
    bad = [n for n in g if not isinstance(g[n], h5py.Group)]
    for i in range(65):
        want = np.array([v * 1000 + i for v in range(i % 7 + 1)])
        if list(a["h5chunk_attr_%03d" % i]) != list(want):
            bad.append("h5chunk_attr_%03d" % i)
    for i in range(extra):
        if list(a["py_more_%03d" % i]) != [i, -i]:
            bad.append("py_more_%03d" % i)
        if "py_more_%03d" % i not in g:
            bad.append("link py_more_%03d" % i)
    print(len(g), len(a), bad)
with h5py.File(sys.argv[1], "r") as f:
    verify(f, 0)
with h5py.File(sys.argv[1], "r+") as f:
    g, a = f["g"], f["d"].attrs
    for i in range(200):
        g.create_group("py_more_%03d" % i)
        a["py_more_%03d" % i] = np.array([i, -i], dtype="i8")
    del g["h5chunk_link_007"]
    del a["pa05"]
with h5py.File(sys.argv[1], "r") as f:
    verify(f, 200)
"#);
    let mut lines = out.lines();
    assert_eq!(lines.next().unwrap(), "82 82 []");
    assert_eq!(lines.next().unwrap(), "281 281 []");
    if let Some(h5dump) = interop::h5dump("added_to_libhdf5_dense_storage") {
        interop::h5dump_ok(&h5dump, &path);
    }
    {
        let file = File::open(&path).unwrap();
        let report = file.check();
        assert!(report.is_clean(), "{report:?}");
        let g = file.group("g").unwrap();
        let d = file.dataset("d").unwrap();
        assert_eq!(g.members().unwrap().len(), 281);
        for i in (0..200).step_by(7) {
            assert!(g.group(&format!("py_more_{i:03}")).is_ok());
            let v = d
                .attr(&format!("py_more_{i:03}"))
                .unwrap()
                .values::<i64>()
                .unwrap();
            assert_eq!(v, [i as i64, -(i as i64)]);
        }
        for i in (0..65).filter(|&i| i != 7) {
            assert!(g.group(&ours(i)).is_ok());
            assert_eq!(
                d.attr(&attr(i)).unwrap().values::<i64>().unwrap(),
                values(i)
            );
        }
    }
    // h5chunk adds again after libhdf5, and libhdf5 reads everything.
    {
        let file = File::open_rw(&path).unwrap();
        file.group("g")
            .unwrap()
            .create_group("h5chunk_last")
            .unwrap();
        file.dataset("d")
            .unwrap()
            .attrs()
            .set_scalar("h5chunk_last", 7i64)
            .unwrap();
        file.close().unwrap();
    }
    let out = run(r#"
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    g, a = f["g"], f["d"].attrs
    bad = [n for n in g if not isinstance(g[n], h5py.Group)]
    print(len(g), len(a), bad, int(a["h5chunk_last"]), list(a["py_more_199"]))
"#);
    assert_eq!(out.trim(), "282 282 [] 7 [np.int64(199), np.int64(-199)]");
    assert!(File::open(&path).unwrap().check().is_clean());
    std::fs::remove_dir_all(&dir).unwrap();
    eprintln!("took {:?}", started.elapsed());
}

/// A dense group h5py made with `track_order=True` (a free-space manager, a creation-order
/// index, a header tracking attribute creation order): h5chunk's links and attributes are
/// listed by h5py in creation order after its own, libhdf5 adds 200 more links after them,
/// and everything reads right in both.
#[test]
fn links_added_to_a_dense_track_order_group_h5py_made_keep_their_order() {
    let Some(python) = interop::python("links_added_to_a_dense_track_order_group") else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("h5chunk-dense-to-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("to.h5");
    let run = |script: &str| interop::run_python(&python, script, &[path.to_str().unwrap()]);
    run(r#"
import sys, h5py
with h5py.File(sys.argv[1], "w", libver="latest") as f:
    g = f.create_group("t", track_order=True)
    for i in range(20):
        g.create_group("py%02d" % (19 - i))
    g.attrs["first"] = 1
    del g["py10"], g["py03"]
"#);
    let ours = ["z_ours", "a_ours", "m_ours", "b_ours", "y_ours"];
    {
        let file = File::open_rw(&path).unwrap();
        let g = file.group("t").unwrap();
        for n in ours {
            g.create_group(n).unwrap();
        }
        g.attrs().set_str("second", "h5chunk").unwrap();
        file.close().unwrap();
    }
    let mut want: Vec<String> = (0..20)
        .map(|i| format!("py{:02}", 19 - i))
        .filter(|n| n != "py10" && n != "py03")
        .collect();
    want.extend(ours.iter().map(|s| s.to_string()));
    {
        let file = File::open(&path).unwrap();
        let report = file.check();
        assert!(report.is_clean(), "{report:?}");
        let listed: Vec<String> = (file.group("t").unwrap().members_in_creation_order())
            .unwrap()
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        assert_eq!(listed, want);
    }
    let out = run(r#"
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    print(" ".join(f["t"]), dict(f["t"].attrs))
with h5py.File(sys.argv[1], "r+") as f:
    for i in range(200):
        f["t"].create_group("more%03d" % i)
with h5py.File(sys.argv[1], "r") as f:
    g = f["t"]
    print(" ".join(g), all(isinstance(g[n], h5py.Group) for n in g))
"#);
    let mut lines = out.lines();
    assert_eq!(
        lines.next().unwrap(),
        format!(
            "{} {{'first': np.int64(1), 'second': 'h5chunk'}}",
            want.join(" ")
        )
    );
    want.extend((0..200).map(|i| format!("more{i:03}")));
    assert_eq!(lines.next().unwrap(), format!("{} True", want.join(" ")));
    let file = File::open(&path).unwrap();
    let report = file.check();
    assert!(report.is_clean(), "{report:?}");
    let g = file.group("t").unwrap();
    let listed: Vec<String> = (g.members_in_creation_order().unwrap().into_iter())
        .map(|(n, _)| n)
        .collect();
    assert_eq!(listed, want);
    assert_eq!(g.attr("second").unwrap().string().unwrap(), "h5chunk");
    drop((g, file));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Groups and datasets h5chunk makes with `track_order` (h5py's `track_order=True`) keep the
/// creation order of their links and attributes as libhdf5's do: the header flags and link
/// info libhdf5 sets, the next creation index on every link and attribute, and, past eight,
/// dense storage with a creation-order index beside the name index. h5py lists them in the
/// order made (compact and dense, a group's links and attributes, a dataset's attributes) and
/// reads libhdf5's creation-order property back; libhdf5 then adds to them and the order still
/// holds in h5py and in h5chunk; h5dump reads the file. Under the earliest format bounds the
/// option is refused, typed.
#[test]
fn groups_and_datasets_made_with_track_order_list_in_creation_order_in_h5py() {
    let Some(python) = interop::python("made_with_track_order") else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("h5chunk-track-order-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("tracked.h5");
    // Names in neither name nor hash order.
    let links: Vec<String> = (0..30).map(|i| format!("m{:02}", (i * 7) % 30)).collect();
    let attrs: Vec<String> = (0..12).map(|i| format!("a{:02}", (i * 5) % 12)).collect();
    let small = ["zeta", "alpha", "mu"];
    {
        let options = FileOptions {
            bounds: LibverBounds::new(Libver::V18, Libver::Latest).unwrap(),
            ..FileOptions::default()
        };
        let file = File::create_with(&path, options).unwrap();
        let t = file
            .create_group_with("t", GroupOptions::track_order(true))
            .unwrap();
        for (i, n) in links.iter().enumerate() {
            if i % 5 == 0 {
                t.new_dataset::<i32>()
                    .shape(&[1])
                    .chunk(&[1])
                    .create(n)
                    .unwrap()
                    .write(&[i as i32])
                    .unwrap();
            } else {
                t.create_group(n).unwrap();
            }
        }
        for (i, n) in attrs.iter().enumerate() {
            t.attrs().set_scalar(n, i as i64).unwrap();
        }
        let s = t
            .create_group_with("s", GroupOptions::track_order(true))
            .unwrap();
        for n in small {
            s.create_group(n).unwrap();
            s.attrs().set_str(n, n).unwrap();
        }
        // Not tracked: listed by name, in h5py and in h5chunk.
        let u = file.create_group("u").unwrap();
        for n in small {
            u.attrs().set_str(n, n).unwrap();
        }
        let d = file
            .new_dataset::<f64>()
            .shape(&[3])
            .chunk(&[3])
            .track_order(true)
            .create("d")
            .unwrap();
        d.write(&[1.0, 2.0, 3.0]).unwrap();
        for (i, n) in attrs.iter().take(5).enumerate() {
            d.attrs().set_scalar(n, i as f64).unwrap();
        }
        file.close().unwrap();
    }
    let listed = |file: &File, p: &str| -> Vec<String> {
        (file.group(p).unwrap().members_in_creation_order().unwrap())
            .into_iter()
            .map(|(n, _)| n)
            .collect()
    };
    let mut want_t: Vec<String> = links.clone();
    want_t.push("s".into());
    {
        let file = File::open(&path).unwrap();
        let report = file.check();
        assert!(report.is_clean(), "{report:?}");
        assert_eq!(listed(&file, "t"), want_t);
        assert_eq!(listed(&file, "t/s"), small);
        // Attributes listed as h5py lists them: creation order when tracked, else by name.
        assert_eq!(file.group("t").unwrap().attrs().names().unwrap(), attrs);
        assert_eq!(file.group("t/s").unwrap().attrs().names().unwrap(), small);
        assert_eq!(
            file.dataset("d").unwrap().attrs().names().unwrap(),
            attrs[..5]
        );
        assert_eq!(
            file.group("u").unwrap().attrs().names().unwrap(),
            ["alpha", "mu", "zeta"]
        );
    }
    let run = |script: &str| interop::run_python(&python, script, &[path.to_str().unwrap()]);
    let show = r#"
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    t, s, d = f["t"], f["t/s"], f["d"]
    print(" ".join(t))
    print(" ".join(t.attrs))
    print(" ".join(s), "|", " ".join(s.attrs))
    print(" ".join(d.attrs), "|", [float(d.attrs[k]) for k in d.attrs], "|", " ".join(f["u"].attrs))
    flags = h5py.h5p.CRT_ORDER_TRACKED | h5py.h5p.CRT_ORDER_INDEXED
    print(t.id.get_create_plist().get_link_creation_order() == flags,
          t.id.get_create_plist().get_attr_creation_order() == flags,
          d.id.get_create_plist().get_attr_creation_order() == flags,
          f["t/m01"].id.get_create_plist().get_link_creation_order() == 0,
          int(t.attrs["a05"]), [float(x) for x in d[:]])
"#;
    let out = run(show);
    let mut lines = out.lines();
    assert_eq!(lines.next().unwrap(), want_t.join(" "));
    assert_eq!(lines.next().unwrap(), attrs.join(" "));
    assert_eq!(
        lines.next().unwrap(),
        format!("{} | {}", small.join(" "), small.join(" "))
    );
    assert_eq!(
        lines.next().unwrap(),
        format!(
            "{} | [0.0, 1.0, 2.0, 3.0, 4.0] | alpha mu zeta",
            attrs[..5].join(" ")
        )
    );
    // a05 is the attribute made second (i = 1), with the value 1.
    assert_eq!(
        lines.next().unwrap(),
        "True True True True 1 [1.0, 2.0, 3.0]"
    );
    // libhdf5 adds to each: the new ones come last.
    run(r#"
import sys, h5py
with h5py.File(sys.argv[1], "r+") as f:
    f["t"].create_group("late")
    f["t"].attrs["late"] = 1
    f["t/s"].create_group("late")
    f["d"].attrs["late"] = 1.5
"#);
    let out = run(show);
    let mut lines = out.lines();
    want_t.push("late".into());
    assert_eq!(lines.next().unwrap(), want_t.join(" "));
    assert_eq!(lines.next().unwrap(), format!("{} late", attrs.join(" ")));
    assert_eq!(
        lines.next().unwrap(),
        format!("{} late | {}", small.join(" "), small.join(" "))
    );
    let file = File::open(&path).unwrap();
    let report = file.check();
    assert!(report.is_clean(), "{report:?}");
    assert_eq!(listed(&file, "t"), want_t);
    drop(file);
    if let Some(h5dump) = interop::h5dump("made_with_track_order") {
        interop::h5dump_ok(&h5dump, &path);
    }
    // The earliest format has no creation order: refused, typed, naming it.
    let old = dir.join("old.h5");
    let options = FileOptions {
        bounds: LibverBounds::new(Libver::Earliest, Libver::Latest).unwrap(),
        ..FileOptions::default()
    };
    let file = File::create_with(&old, options).unwrap();
    match file.create_group_with("t", GroupOptions::track_order(true)) {
        Err(Error::Unsupported(what)) => assert!(what.contains("creation-order"), "{what}"),
        other => panic!("expected a typed refusal, got {other:?}"),
    }
    match file
        .new_dataset::<f64>()
        .shape(&[1])
        .chunk(&[1])
        .track_order(true)
        .create("d")
    {
        Err(Error::Unsupported(what)) => assert!(what.contains("creation-order"), "{what}"),
        other => panic!("expected a typed refusal, got {other:?}"),
    }
    drop(file);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Attribute values past what a fractal heap manages (4 KiB) are stored as libhdf5 stores them,
/// as "huge" heap objects (space of their own, a huge-object v2 B-tree of type 1 and IDs from
/// 1 in the heap ID), and one past what an object header message holds (64 KiB) moves the
/// attributes to dense storage at once, as libhdf5 moves them: on a group, on a dataset going
/// dense with a huge attribute among its first nine, replaced by another huge value, and on a
/// group tracking creation order. h5py and h5dump read every value; libhdf5 then adds a huge
/// attribute and deletes one of h5chunk's, and h5chunk reads the result with `check` clean.
/// A version 1 header refuses an attribute over 64 KiB, typed, as libhdf5 does, and keeps the
/// attribute it would have replaced.
#[test]
fn huge_attributes_are_stored_as_libhdf5_stores_them() {
    let Some(python) = interop::python("huge_attributes") else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("h5chunk-huge-attrs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("huge.h5");
    let big: Vec<f64> = (0..20_000).map(|i| i as f64 * 0.5).collect();
    let mid: Vec<i64> = (0..1000).map(|i| i * 3 - 7).collect();
    let mid2: Vec<i64> = (0..2000).map(|i| -i).collect();
    let wide: Vec<i32> = (0..100_000).map(|i| i ^ 0x5a5a).collect();
    {
        let options = FileOptions {
            bounds: LibverBounds::new(Libver::Latest, Libver::Latest).unwrap(),
            ..FileOptions::default()
        };
        let file = File::create_with(&path, options).unwrap();
        let g = file.create_group("g").unwrap();
        g.attrs().set_str("note", "small").unwrap();
        g.attrs().set("big", &big).unwrap();
        let d = file
            .new_dataset::<i32>()
            .shape(&[4])
            .chunk(&[4])
            .create("d")
            .unwrap();
        for i in 0..4 {
            d.attrs().set_scalar(&format!("s{i}"), i as i64).unwrap();
        }
        d.attrs().set("mid", &mid).unwrap();
        for i in 4..9 {
            d.attrs().set_scalar(&format!("s{i}"), i as i64).unwrap();
        }
        d.attrs().set("mid", &mid2).unwrap();
        d.attrs().set("wide", &wide).unwrap();
        let t = file
            .create_group_with("t", GroupOptions::track_order(true))
            .unwrap();
        for i in 0..10 {
            t.attrs()
                .set(&format!("z{i}"), &mid[..(600 + i * 10)])
                .unwrap();
        }
        file.close().unwrap();
    }
    let check_ours = |file: &File, extra: bool| {
        let report = file.check();
        assert!(report.is_clean(), "{report:?}");
        let g = file.group("g").unwrap();
        if !extra {
            assert_eq!(g.attr("big").unwrap().values::<f64>().unwrap(), big);
        }
        let d = file.dataset("d").unwrap();
        assert_eq!(d.attr("mid").unwrap().values::<i64>().unwrap(), mid2);
        assert_eq!(d.attr("wide").unwrap().values::<i32>().unwrap(), wide);
        assert_eq!(d.attr("s7").unwrap().values::<i64>().unwrap(), [7]);
        let t = file.group("t").unwrap();
        for i in 0..10 {
            let got = t.attr(&format!("z{i}")).unwrap().values::<i64>().unwrap();
            assert_eq!(got, mid[..(600 + i * 10)]);
        }
    };
    check_ours(&File::open(&path).unwrap(), false);
    // Huge objects, as libhdf5 keeps them: one huge-object B-tree per heap that has them.
    let run = |script: &str| interop::run_python(&python, script, &[path.to_str().unwrap()]);
    let out = run(r#"
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "r") as f:
    g, d, t = f["g"], f["d"], f["t"]
    print(float(g.attrs["big"].sum()), len(g.attrs["big"]), g.attrs["note"])
    print(int(d.attrs["mid"].sum()), len(d.attrs["mid"]), int(d.attrs["wide"].astype("i8").sum()), " ".join(d.attrs))
    print(" ".join(t.attrs), int(t.attrs["z9"][-1]), len(t.attrs["z9"]))
with h5py.File(sys.argv[1], "r+") as f:
    f["g"].attrs["added"] = np.arange(30000, dtype="<i4")
    del f["g"].attrs["big"]
    f["d"].attrs["more"] = np.arange(3000.0)
with h5py.File(sys.argv[1], "r") as f:
    print(" ".join(sorted(f["g"].attrs)), int(f["g"].attrs["added"].sum()), float(f["d"].attrs["more"].sum()))
"#);
    let mut lines = out.lines();
    let big_sum: f64 = big.iter().sum();
    assert_eq!(lines.next().unwrap(), format!("{big_sum:?} 20000 small"));
    let wide_sum: i64 = wide.iter().map(|&v| i64::from(v)).sum();
    let mut d_names: Vec<String> = (0..9).map(|i| format!("s{i}")).collect();
    d_names.extend(["mid".to_string(), "wide".to_string()]);
    d_names.sort();
    let line = lines.next().unwrap();
    assert_eq!(
        line,
        format!(
            "{} 2000 {wide_sum} {}",
            mid2.iter().sum::<i64>(),
            d_names.join(" ")
        )
    );
    let t_names: Vec<String> = (0..10).map(|i| format!("z{i}")).collect();
    assert_eq!(
        lines.next().unwrap(),
        format!("{} {} 690", t_names.join(" "), mid[689])
    );
    assert_eq!(
        lines.next().unwrap(),
        format!(
            "added note {} {:?}",
            (0..30000i64).sum::<i64>(),
            2999.0f64 * 3000.0 / 2.0
        )
    );
    let file = File::open(&path).unwrap();
    check_ours(&file, true);
    let g = file.group("g").unwrap();
    assert!(g.attr("big").is_err());
    assert_eq!(
        g.attr("added").unwrap().values::<i32>().unwrap(),
        (0..30000).collect::<Vec<i32>>()
    );
    drop((g, file));
    if let Some(h5dump) = interop::h5dump("huge_attributes") {
        interop::h5dump_ok(&h5dump, &path);
    }
    // A version 1 header: refused, typed, the old value kept.
    let old = dir.join("old.h5");
    {
        let file = File::create(&old).unwrap();
        let g = file.create_group("g").unwrap();
        g.attrs().set("big", &mid).unwrap();
        match g.attrs().set("big", &big) {
            Err(Error::Unsupported(what)) => assert!(what.contains("64 KiB"), "{what}"),
            other => panic!("expected a typed refusal, got {other:?}"),
        }
        file.close().unwrap();
    }
    let file = File::open(&old).unwrap();
    assert_eq!(
        file.group("g")
            .unwrap()
            .attr("big")
            .unwrap()
            .values::<i64>()
            .unwrap(),
        mid
    );
    drop(file);
    std::fs::remove_dir_all(&dir).unwrap();
}
