//! External links, followed and created, against h5py (libhdf5): an EIGER-shaped master file
//! whose `/entry/data/data_00000N` links name data files of bitshuffle/LZ4 one-frame chunks
//! (read whole, equal to h5py, with the NeXus groups and attributes on the way); the target
//! found through `HDF5_EXT_PREFIX` (in a child process, so no other test sees the variable) and
//! relative to the linking file's folder when the working folder is elsewhere; a missing
//! target and a cycle between two files as typed errors naming the link and the file; and the
//! links h5chunk creates (in old-style groups, which become new-style as libhdf5 makes them, in
//! compact and in dense groups) read by h5py and `h5dump`.
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used
)]

use std::path::{Path, PathBuf};

use h5chunk::libver::{Libver, LibverBounds};
use h5chunk::{Error, File, FileOptions, LinkValue, MemberKind};
use h5chunk_testkit::interop;

/// A fresh folder of this test's own under the target's temporary folder.
fn folder(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("external_links")
        .join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// An EIGER-like master file in argv[1] and its data files beside it: NeXus groups with
/// `NX_class` attributes, `/entry/data/data_00000N` -> `<stem>_data_00000N.h5:/entry/data/data`
/// (u32 frames, one frame a chunk, bitshuffle/LZ4 as the detector writes them), an instrument
/// group with a plain dataset, and `/entry/data/first` linking a whole group of a data file.
/// A dataset's values through h5py with hdf5plugin loaded (the data files' bitshuffle/LZ4),
/// as little-endian bytes in C order.
fn values_le(python: &Path, file: &Path, dataset: &str) -> Vec<u8> {
    let hex = interop::run_python(
        python,
        "import sys, h5py, hdf5plugin, numpy as np\n\
         a = h5py.File(sys.argv[1], 'r')[sys.argv[2]][...]\n\
         print(a.astype(a.dtype.newbyteorder('<')).tobytes().hex())",
        &[s(file), dataset],
    );
    let hex = hex.trim();
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect()
}

const EIGER: &str = r#"
import sys, os, h5py, hdf5plugin, numpy as np
folder, stem = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(34)
for i in (1, 2):
    with h5py.File(os.path.join(folder, f'{stem}_data_{i:06d}.h5'), 'w') as f:
        e = f.create_group('entry'); e.attrs['NX_class'] = 'NXentry'
        d = e.create_group('data'); d.attrs['NX_class'] = 'NXdata'
        frames = rng.integers(0, 4000, (3 + i, 24, 40), dtype=np.uint32)
        frames[:, 5, :] = 0
        ds = d.create_dataset('data', data=frames, chunks=(1, 24, 40),
                              **hdf5plugin.Bitshuffle(nelems=0, cname='lz4'))
        ds.attrs['image_nr_low'] = np.int32(1)
with h5py.File(os.path.join(folder, f'{stem}_master.h5'), 'w') as f:
    e = f.create_group('entry'); e.attrs['NX_class'] = 'NXentry'
    d = e.create_group('data'); d.attrs['NX_class'] = 'NXdata'
    for i in (1, 2):
        d[f'data_{i:06d}'] = h5py.ExternalLink(f'{stem}_data_{i:06d}.h5', '/entry/data/data')
    d['first'] = h5py.ExternalLink(f'{stem}_data_000001.h5', '/entry')
    inst = e.create_group('instrument'); inst.attrs['NX_class'] = 'NXinstrument'
    det = inst.create_group('detector'); det.attrs['NX_class'] = 'NXdetector'
    det['count_time'] = 0.001
print('ok')
"#;

#[test]
fn eiger_master_reads_equal_h5py() {
    let Some(python) = interop::python("eiger_master_reads_equal_h5py") else {
        return;
    };
    let dir = folder("eiger");
    interop::run_python(&python, EIGER, &[s(&dir), "eig"]);
    let master = dir.join("eig_master.h5");
    // The working folder (the crate's) is not the files' folder: the links are found
    // relative to the master file's folder.
    assert!(!Path::new("eig_data_000001.h5").exists());
    let f = File::open(&master).unwrap();
    let data = f.group("/entry/data").unwrap();
    assert_eq!(data.attr("NX_class").unwrap().string().unwrap(), "NXdata");
    assert_eq!(
        data.members().unwrap(),
        [
            ("data_000001".to_owned(), MemberKind::Other),
            ("data_000002".to_owned(), MemberKind::Other),
            ("first".to_owned(), MemberKind::Other),
        ]
    );
    assert_eq!(
        data.link("data_000002").unwrap(),
        Some(LinkValue::External {
            file: "eig_data_000002.h5".into(),
            path: "/entry/data/data".into()
        })
    );
    for (i, frames) in [(1, 4u64), (2, 5)] {
        let link = format!("/entry/data/data_{i:06}");
        let d = f.dataset(&link).unwrap();
        // The dataset is the data file's, at its path there (as h5py's `.name`).
        assert_eq!(d.path(), "/entry/data/data");
        assert_eq!(d.shape(), [frames, 24, 40]);
        let ours: Vec<u8> = d
            .read::<u32>()
            .unwrap()
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let theirs = values_le(&python, &master, &link);
        assert_eq!(ours.len(), theirs.len());
        assert!(ours == theirs, "{link}: values differ from h5py's");
        assert_eq!(d.attr("image_nr_low").unwrap().value::<i32>().unwrap(), 1);
    }
    // Through a group: Group::dataset and a path that goes on past the link.
    let by_group = data.dataset("data_000001").unwrap().read::<u32>().unwrap();
    let past = f.dataset("entry/data/first/data/data").unwrap();
    assert_eq!(past.read::<u32>().unwrap(), by_group);
    let first = f.group("/entry/data/first").unwrap();
    assert_eq!(first.path(), "/entry");
    assert_eq!(first.attr("NX_class").unwrap().string().unwrap(), "NXentry");
    assert_eq!(
        f.dataset("/entry/instrument/detector/count_time")
            .unwrap()
            .read::<f64>()
            .unwrap(),
        [0.001]
    );
    // The wrong kind through a link is still the wrong kind.
    assert!(matches!(
        f.group("/entry/data/data_000001"),
        Err(Error::WrongKind { .. })
    ));
    // Opened read-only, as the master is, and shared: this process has the data file open
    // read-only through the link, so an open for writing is refused as for any file open
    // read-only here; a second read-only open shares it.
    let held = f.dataset("/entry/data/data_000002").unwrap();
    let data2 = dir.join("eig_data_000002.h5");
    assert!(matches!(
        File::open_rw(&data2),
        Err(Error::AlreadyOpen { .. })
    ));
    let again = File::open(&data2).unwrap();
    assert_eq!(
        again
            .dataset("/entry/data/data")
            .unwrap()
            .read::<u32>()
            .unwrap(),
        held.read::<u32>().unwrap()
    );
}

#[test]
fn writable_master_opens_targets_writable() {
    let Some(python) = interop::python("writable_master_opens_targets_writable") else {
        return;
    };
    let dir = folder("writable");
    interop::run_python(&python, EIGER, &[s(&dir), "w"]);
    // libhdf5 opens a link's target with the linking file's intent: a master open for
    // writing opens its data files for writing, so a read-only open of one shares it and
    // sees a write made through the link.
    let f = File::open_rw(dir.join("w_master.h5")).unwrap();
    let d = f.dataset("/entry/data/data_000001").unwrap();
    let mut v = d.read::<u32>().unwrap();
    v[0] = 4_000_000;
    d.write(&v).unwrap();
    let other = File::open(dir.join("w_data_000001.h5")).unwrap();
    assert!(other.is_writable(), "shared with the writable open");
    assert_eq!(
        other
            .dataset("/entry/data/data")
            .unwrap()
            .read::<u32>()
            .unwrap()[0],
        4_000_000
    );
    drop((d, other));
    // New objects at paths through a link are made in the file it names (h5py's
    // `create_dataset` / `create_group` through an external link).
    f.new_dataset::<u8>()
        .shape(&[3])
        .chunk(&[3])
        .create("/entry/data/first/made_here")
        .unwrap()
        .write(&[7, 8, 9])
        .unwrap();
    f.create_group("/entry/data/first/group_here").unwrap();
    assert!(!f.root().unwrap().contains("made_here").unwrap());
    f.close().unwrap();
    let data1 = File::open(dir.join("w_data_000001.h5")).unwrap();
    assert_eq!(
        data1
            .dataset("/entry/made_here")
            .unwrap()
            .read::<u8>()
            .unwrap(),
        [7, 8, 9]
    );
    assert_eq!(
        data1.group("/entry/group_here").unwrap().path(),
        "/entry/group_here"
    );
    drop(data1);
    // Through a read-only master, the target is read-only too.
    let ro = File::open(dir.join("w_master.h5")).unwrap();
    assert!(matches!(
        ro.create_group("/entry/data/first/nope"),
        Err(Error::ReadOnly { .. })
    ));
    drop(ro);
    let out = interop::run_python(
        &python,
        "import sys, h5py, hdf5plugin; print(int(h5py.File(sys.argv[1], 'r')['/entry/data/data_000001'][0, 0, 0]))",
        &[s(&dir.join("w_master.h5"))],
    );
    assert_eq!(out.trim(), "4000000");
    let out = interop::run_python(
        &python,
        "import sys, h5py; print(h5py.File(sys.argv[1], 'r')['/entry/made_here'][...].tolist())",
        &[s(&dir.join("w_data_000001.h5"))],
    );
    assert_eq!(out.trim(), "[7, 8, 9]");
}

/// Run as a child process by `ext_prefix_finds_targets`, with `HDF5_EXT_PREFIX` set; does
/// nothing otherwise.
#[test]
fn ext_prefix_child() {
    let Ok(dir) = std::env::var("H5CHUNK_EXT_PREFIX_TEST") else {
        return;
    };
    let dir = Path::new(&dir);
    let f = File::open(dir.join("master/p_master.h5")).unwrap();
    // data_000001 lies only under the second prefix folder.
    let d = f.dataset("/entry/data/data_000001").unwrap();
    assert_eq!(d.shape(), [4, 24, 40]);
    // An absolute name that does not exist is looked up by its last component under the
    // prefixes.
    let d = f.dataset("/entry/data/absolute").unwrap();
    assert_eq!(d.shape(), [5, 24, 40]);
    // A name none of the prefixes, the master's folder or the working folder holds.
    match f.dataset("/entry/data/nowhere") {
        Err(Error::ExternalMissing { tried, .. }) => {
            let tried = tried.join(" ");
            assert!(tried.contains("p1/nowhere.h5"), "{tried}");
            assert!(tried.contains("p2/nowhere.h5"), "{tried}");
        }
        other => panic!("expected ExternalMissing, got {other:?}"),
    }
    println!("EXT_PREFIX_CHILD_OK");
}

#[test]
fn ext_prefix_finds_targets() {
    let Some(python) = interop::python("ext_prefix_finds_targets") else {
        return;
    };
    let dir = folder("prefix");
    interop::run_python(&python, EIGER, &[s(&dir), "p"]);
    // The master alone in its folder; the data files under the second of two prefixes.
    for sub in ["master", "p1", "p2"] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
    }
    std::fs::rename(dir.join("p_master.h5"), dir.join("master/p_master.h5")).unwrap();
    for i in [1, 2] {
        let name = format!("p_data_{i:06}.h5");
        std::fs::rename(dir.join(&name), dir.join("p2").join(&name)).unwrap();
    }
    interop::run_python(
        &python,
        "import sys, h5py\n\
         with h5py.File(sys.argv[1], 'a') as f:\n\
         \x20   f['/entry/data/absolute'] = h5py.ExternalLink('/no/such/folder/p_data_000002.h5', '/entry/data/data')\n\
         \x20   f['/entry/data/nowhere'] = h5py.ExternalLink('nowhere.h5', '/x')\n",
        &[s(&dir.join("master/p_master.h5"))],
    );
    let prefixes = format!("{}:{}", s(&dir.join("p1")), s(&dir.join("p2")));
    // What h5py finds through the same variable.
    let out = interop::run_python_env(
        &python,
        "import sys, h5py, hdf5plugin; f = h5py.File(sys.argv[1], 'r'); print(f['/entry/data/data_000001'].shape, f['/entry/data/absolute'].shape)",
        &[s(&dir.join("master/p_master.h5"))],
        &[("HDF5_EXT_PREFIX", &prefixes)],
    );
    assert_eq!(out.trim(), "(4, 24, 40) (5, 24, 40)");
    let child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "ext_prefix_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("HDF5_EXT_PREFIX", &prefixes)
        .env("H5CHUNK_EXT_PREFIX_TEST", &dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&child.stdout);
    assert!(
        child.status.success() && stdout.contains("EXT_PREFIX_CHILD_OK"),
        "child failed: {stdout}\n{}",
        String::from_utf8_lossy(&child.stderr)
    );
    // Without the variable the data files are nowhere to be found.
    let f = File::open(dir.join("master/p_master.h5")).unwrap();
    if std::env::var_os("HDF5_EXT_PREFIX").is_none() {
        assert!(matches!(
            f.dataset("/entry/data/data_000001"),
            Err(Error::ExternalMissing { .. })
        ));
    }
}

#[test]
fn missing_target_and_cycle_are_typed_errors() {
    let Some(python) = interop::python("missing_target_and_cycle_are_typed_errors") else {
        return;
    };
    let dir = folder("errors");
    interop::run_python(
        &python,
        "import sys, os, h5py\n\
         d = sys.argv[1]\n\
         with h5py.File(os.path.join(d, 'cyc_a.h5'), 'w') as f:\n\
         \x20   f['x'] = h5py.ExternalLink('cyc_b.h5', '/y')\n\
         \x20   f['gone'] = h5py.ExternalLink('no_such_file.h5', '/data')\n\
         \x20   f.create_group('g')['self'] = h5py.ExternalLink('cyc_a.h5', '/g/self')\n\
         with h5py.File(os.path.join(d, 'cyc_b.h5'), 'w') as f:\n\
         \x20   f['y'] = h5py.ExternalLink('cyc_a.h5', '/x')\n",
        &[s(&dir)],
    );
    let a = dir.join("cyc_a.h5");
    let f = File::open(&a).unwrap();
    match f.dataset("/gone") {
        Err(e @ Error::ExternalMissing { .. }) => {
            let msg = e.to_string();
            assert!(msg.contains("/gone"), "names the link: {msg}");
            assert!(msg.contains("no_such_file.h5"), "names the file: {msg}");
            assert!(msg.contains("cyc_a.h5"), "names the linking file: {msg}");
        }
        other => panic!("expected ExternalMissing, got {other:?}"),
    }
    // a -> b -> a -> ...: libhdf5's limit of 16 links ends it.
    for path in ["/x", "/x/more", "/g/self"] {
        match f.dataset(path) {
            Err(Error::LinkDepth { limit, link, .. }) => {
                assert_eq!(limit, 16);
                assert!(link == "/x" || link == "/y" || link == "/g/self", "{link}");
            }
            other => panic!("{path}: expected LinkDepth, got {other:?}"),
        }
        assert!(matches!(f.group(path), Err(Error::LinkDepth { .. })));
    }
    // h5py refuses them too.
    let out = interop::run_python(
        &python,
        "import sys, h5py\n\
         f = h5py.File(sys.argv[1], 'r')\n\
         for p in ('/x', '/gone'):\n\
         \x20   try:\n\
         \x20       f[p]; print('opened')\n\
         \x20   except (KeyError, OSError):\n\
         \x20       print('refused')\n",
        &[s(&a)],
    );
    assert_eq!(
        out.split_whitespace().collect::<Vec<_>>(),
        ["refused", "refused"]
    );
}

/// Checks, in h5py, every external link h5chunk made in argv[1]: its file and path, and the
/// values read through it.
const CHECK_CREATED: &str = r#"
import sys, h5py, numpy as np
f = h5py.File(sys.argv[1], 'r')
out = []
def visit(g):
    for name in g:
        l = g.get(name, getlink=True)
        if isinstance(l, h5py.ExternalLink):
            out.append(f'{g.name.rstrip("/")}/{name} {l.filename} {l.path} {int(np.asarray(g[name][...]).sum())}')
        elif isinstance(l, h5py.HardLink) and isinstance(g[name], h5py.Group):
            visit(g[name])
visit(f)
print('\n'.join(sorted(out)))
"#;

#[test]
fn created_links_read_in_h5py_and_h5dump() {
    let dir = folder("created");
    let target = dir.join("target.h5");
    {
        let t = File::create(&target).unwrap();
        t.create_group("/entry").unwrap();
        let d = t
            .new_dataset::<u16>()
            .shape(&[6, 5])
            .chunk(&[3, 5])
            .create("/entry/data")
            .unwrap();
        d.write(&(0..30u16).collect::<Vec<_>>()).unwrap();
        t.close().unwrap();
    }
    let expect_sum: u64 = (0..30u64).sum();
    let latest = FileOptions {
        bounds: LibverBounds::new(Libver::V18, Libver::Latest).unwrap(),
        ..FileOptions::default()
    };
    // (file, options, groups and their links)
    let cases: [(&str, FileOptions, usize); 3] = [
        // h5py's default bounds: old-style groups, turned new-style to hold the link.
        ("old.h5", FileOptions::default(), 3),
        // New-style compact groups.
        ("compact.h5", latest, 3),
        // Past the compact limit: dense storage (the old-style root with 10 links turns
        // into a dense group at once).
        ("dense.h5", FileOptions::default(), 10),
    ];
    let mut expected = Vec::new();
    for (name, options, n) in cases {
        let path = dir.join(name);
        let f = File::create_with(&path, options).unwrap();
        let sub = f.create_group("/sub").unwrap();
        f.create_group("/sub/kept").unwrap();
        let mut lines = Vec::new();
        for i in 0..n {
            f.create_group(&format!("/g{i:02}")).unwrap();
        }
        // The subgroup first (its parent, still old-style, caches the subgroup's symbol
        // table in its entry: libhdf5 must not trip on the group being new-style now) with a
        // relative name; then the root, with the target's absolute name.
        sub.link_external("rel", "target.h5", "/entry/data")
            .unwrap();
        lines.push(format!("/sub/rel target.h5 /entry/data {expect_sum}"));
        f.link_external("/ext", s(&target), "/entry/data").unwrap();
        lines.push(format!("/ext {} /entry/data {expect_sum}", s(&target)));
        // A name taken is refused, the link kept.
        assert!(matches!(
            sub.link_external("rel", "x.h5", "/y"),
            Err(Error::Exists { .. })
        ));
        // Read back before and after closing, through the links and past them.
        let check = |f: &File| {
            assert_eq!(f.dataset("/ext").unwrap().read::<u16>().unwrap().len(), 30);
            assert_eq!(
                f.dataset("/sub/rel").unwrap().read::<u16>().unwrap(),
                (0..30u16).collect::<Vec<_>>()
            );
            assert_eq!(f.group("/sub/kept").unwrap().path(), "/sub/kept");
            let root = f.root().unwrap();
            assert_eq!(root.members().unwrap().len(), n + 2);
            assert_eq!(
                root.link("ext").unwrap(),
                Some(LinkValue::External {
                    file: s(&target).to_owned(),
                    path: "/entry/data".into()
                })
            );
        };
        check(&f);
        f.close().unwrap();
        check(&File::open(&path).unwrap());
        lines.sort();
        expected.push((path, lines));
    }
    if let Some(h5dump) = interop::h5dump("created_links_read_in_h5py_and_h5dump") {
        for (path, _) in &expected {
            interop::h5dump_ok(&h5dump, path);
            let out = std::process::Command::new(&h5dump)
                .arg(path)
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(
                text.contains("EXTERNAL_LINK \"ext\"")
                    && text.contains("TARGETPATH \"/entry/data\""),
                "{}: {text}",
                path.display()
            );
        }
    }
    let Some(python) = interop::python("created_links_read_in_h5py_and_h5dump") else {
        return;
    };
    for (path, lines) in &expected {
        let out = interop::run_python(&python, CHECK_CREATED, &[s(path)]);
        assert_eq!(
            out.lines().collect::<Vec<_>>(),
            lines.iter().map(String::as_str).collect::<Vec<_>>(),
            "{}",
            path.display()
        );
    }
}

/// An external link in a subgroup of an old-style root: the subgroup turns new-style while the
/// root, still old-style, caches the subgroup's former symbol table in its entry (libhdf5
/// leaves such entries as they are too); h5py reads it, changes it (`'a'`) and reads it again,
/// and `h5dump` reads it.
#[test]
fn subgroup_turned_new_style_under_old_style_root() {
    let dir = folder("sub_only");
    let target = dir.join("t.h5");
    {
        let t = File::create(&target).unwrap();
        t.new_dataset::<i32>()
            .shape(&[4])
            .chunk(&[4])
            .create("/d")
            .unwrap()
            .write(&[1, 2, 3, 4])
            .unwrap();
        t.close().unwrap();
    }
    let path = dir.join("m.h5");
    let f = File::create(&path).unwrap();
    let sub = f.create_group("/sub").unwrap();
    f.create_group("/sub/kept").unwrap();
    f.create_group("/other").unwrap();
    sub.link_external("ext", "t.h5", "/d").unwrap();
    f.close().unwrap();
    let f = File::open(&path).unwrap();
    assert_eq!(
        f.dataset("/sub/ext").unwrap().read::<i32>().unwrap(),
        [1, 2, 3, 4]
    );
    assert_eq!(f.root().unwrap().members().unwrap().len(), 2);
    drop(f);
    if let Some(h5dump) = interop::h5dump("subgroup_turned_new_style_under_old_style_root") {
        interop::h5dump_ok(&h5dump, &path);
    }
    let Some(python) = interop::python("subgroup_turned_new_style_under_old_style_root") else {
        return;
    };
    let out = interop::run_python(
        &python,
        "import sys, h5py\n\
         with h5py.File(sys.argv[1], 'a') as f:\n\
         \x20   print(sorted(f['sub']), int(f['sub/ext'][...].sum()))\n\
         \x20   f['sub/more'] = h5py.ExternalLink('t.h5', '/d')\n\
         \x20   f.create_group('sub/g')\n\
         with h5py.File(sys.argv[1], 'r') as f:\n\
         \x20   print(sorted(f['sub']), int(f['sub/more'][...].sum()), sorted(f))\n",
        &[s(&path)],
    );
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        [
            "['ext', 'kept'] 10",
            "['ext', 'g', 'kept', 'more'] 10 ['other', 'sub']"
        ]
    );
    // And h5chunk reads what h5py added.
    let f = File::open(&path).unwrap();
    assert_eq!(
        f.dataset("/sub/more").unwrap().read::<i32>().unwrap(),
        [1, 2, 3, 4]
    );
}

/// A link naming something that is not a regular file (a FIFO, whose open would wait for a
/// writer forever; a folder; a device) is missing, not a hang; so is a file that is nowhere.
#[test]
fn links_to_non_files_are_missing_not_hangs() {
    let dir = folder("non_files");
    let path = dir.join("m.h5");
    let f = File::create(&path).unwrap();
    std::fs::create_dir_all(dir.join("folder.h5")).unwrap();
    let mut names = vec!["folder.h5", "/dev/null", "nowhere.h5"];
    #[cfg(unix)]
    {
        let made = std::process::Command::new("mkfifo")
            .arg(dir.join("pipe.h5"))
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        if made {
            names.push("pipe.h5");
        }
    }
    for (i, name) in names.iter().enumerate() {
        f.link_external(&format!("/l{i}"), name, "/x").unwrap();
    }
    for (i, name) in names.iter().enumerate() {
        match f.dataset(&format!("/l{i}")) {
            Err(Error::ExternalMissing { target, link, .. }) => {
                assert_eq!((target.as_str(), link), (*name, format!("/l{i}")));
            }
            other => panic!("{name}: expected ExternalMissing, got {other:?}"),
        }
    }
}

/// The external links of the libhdf5 fixtures (`sb2_v108.h5`, `sb3_latest.h5`) name a sibling
/// fixture: followed, they reach the same group as opening that file does (no tool needed).
#[test]
fn fixture_external_links_reach_their_sibling() {
    let dir = h5chunk_testkit::fixtures::dir();
    for (file, target) in [("sb2_v108.h5", "/g1"), ("sb3_latest.h5", "/g1/g2")] {
        // Both are in the committed subset, so in every fixture folder.
        let path = dir.join(file);
        let f = File::open(&path).unwrap();
        assert_eq!(
            f.root().unwrap().link("external").unwrap(),
            Some(LinkValue::External {
                file: "sb0_earliest.h5".into(),
                path: target.into()
            })
        );
        let through = f.group("/external").unwrap();
        assert_eq!(through.path(), target);
        let direct = File::open(dir.join("sb0_earliest.h5"))
            .unwrap()
            .group(target)
            .unwrap();
        assert_eq!(through.members().unwrap(), direct.members().unwrap());
        assert_eq!(through.object_address(), direct.object_address());
        assert!(!through.members().unwrap().is_empty());
    }
}
