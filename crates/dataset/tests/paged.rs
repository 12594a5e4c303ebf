//! Paged files (libhdf5's paged aggregation): libhdf5's read by h5chunk, h5chunk's read by
//! libhdf5 (h5py, h5dump, h5stat), with the file space strategy and page size libhdf5 reports,
//! and the page invariants of paged aggregation kept.
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used
)]

use std::path::{Path, PathBuf};

use h5chunk::libver::{Libver, LibverBounds};
use h5chunk::{File, FileOptions, FileSpaceStrategy, FilterSpec};
use h5chunk_testkit::{h5py, interop};

fn tmp(name: &str) -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join(name)
}

/// What every file of these tests holds, as h5py writes it (`make`) and as h5chunk checks
/// it: a deflated chunked f8 dataset of 10 chunks, a contiguous i4 dataset of 3,000 values
/// (12,000 bytes: three pages of 4 KiB), a group with an attribute.
const MAKE: &str = r#"
import sys, h5py, numpy as np
path, strategy, persist, page, libver = sys.argv[1], sys.argv[2], sys.argv[3] == "1", int(sys.argv[4]), sys.argv[5]
kw = {} if strategy == "default" else dict(fs_strategy=strategy, fs_persist=persist, fs_page_size=page)
with h5py.File(path, "w", libver=libver, **kw) as f:
    f.create_dataset("a", data=np.arange(1000, dtype="<f8"), chunks=(100,), compression="gzip")
    f.create_dataset("b", data=np.arange(3000, dtype="<i4"))
    g = f.create_group("g")
    g.attrs["x"] = 7
    g.create_dataset("c", data=np.arange(50, dtype="<u2"), chunks=(8,))
"#;

/// `(strategy, persist, page size)` as libhdf5 reports them for `path`.
const REPORT: &str = r#"
import sys, h5py
f = h5py.File(sys.argv[1], "r")
p = f.id.get_create_plist()
s, persist, threshold = p.get_file_space_strategy()
print(s, int(bool(persist)), threshold, p.get_file_space_page_size())
"#;

fn check_contents(path: &Path) {
    let f = File::open(path).unwrap();
    let a: Vec<f64> = f.dataset("a").unwrap().read().unwrap();
    assert_eq!(a, (0..1000).map(f64::from).collect::<Vec<_>>());
    let b: Vec<i32> = f.dataset("b").unwrap().read().unwrap();
    assert_eq!(b, (0..3000).collect::<Vec<_>>());
    let c: Vec<u16> = f.dataset("g/c").unwrap().read().unwrap();
    assert_eq!(c, (0..50).collect::<Vec<_>>());
    let g = f.group("g").unwrap();
    assert_eq!(g.attr("x").unwrap().value::<i64>().unwrap(), 7);
}

#[test]
fn libhdf5_paged_files_read() {
    let Some(python) = interop::python("libhdf5_paged_files_read") else {
        return;
    };
    for (strategy, persist, page, libver) in [
        ("page", "0", 4096, "earliest"),
        ("page", "1", 4096, "earliest"),
        ("page", "0", 512, "latest"),
        ("page", "1", 65536, "latest"),
        ("fsm", "1", 4096, "latest"),
        ("aggregate", "0", 4096, "earliest"),
    ] {
        let name = format!("libhdf5_{strategy}_{persist}_{page}_{libver}.h5");
        let path = tmp(&name);
        interop::run_python(
            &python,
            MAKE,
            &[
                path.to_str().unwrap(),
                strategy,
                persist,
                &page.to_string(),
                libver,
            ],
        );
        check_contents(&path);
        let f = File::open(&path).unwrap();
        let fs = f
            .file_space()
            .unwrap_or_else(|| panic!("{name}: no file space info"));
        let want = match strategy {
            "page" => FileSpaceStrategy::Page,
            "fsm" => FileSpaceStrategy::FsmAggr,
            _ => FileSpaceStrategy::Aggr,
        };
        assert_eq!(fs.strategy, want, "{name}");
        assert_eq!(fs.persist, persist == "1", "{name}");
        assert_eq!(fs.page_size, page, "{name}");
        assert_eq!(fs.is_paged(), strategy == "page", "{name}");
        let libhdf5 = interop::run_python(&python, REPORT, &[path.to_str().unwrap()]);
        let code = fs.strategy.code();
        assert_eq!(
            libhdf5.trim(),
            format!("{code} {persist} {} {page}", fs.threshold),
            "{name}"
        );
        drop(f);
        // Persisted free space keeps the file read-only; otherwise h5chunk writes to it, in
        // its pages, and libhdf5 reads what it wrote.
        match File::open_rw(&path) {
            Err(h5chunk::Error::Unsupported(what)) => {
                assert_eq!(persist, "1", "{name}: {what}");
                assert!(what.contains("persists free space"), "{name}: {what}");
            }
            Ok(f) => {
                assert_eq!(persist, "0", "{name}");
                let d = f
                    .new_dataset::<i32>()
                    .shape(&[2000])
                    .chunk(&[500])
                    .create("added")
                    .unwrap();
                d.write(&(0..2000).collect::<Vec<i32>>()).unwrap();
                f.close().unwrap();
                let len = std::fs::metadata(&path).unwrap().len();
                if strategy == "page" {
                    assert_eq!(len % page, 0, "{name}: {len} bytes");
                }
                check_contents(&path);
                let le: Vec<u8> = (0..2000i32).flat_map(|v| v.to_le_bytes()).collect();
                assert_eq!(h5py::values_le(&python, &path, "added"), le, "{name}");
            }
            Err(e) => panic!("{name}: {e}"),
        }
    }
}

#[test]
fn h5repack_paged_files_read() {
    let Some(python) = interop::python("h5repack_paged_files_read") else {
        return;
    };
    let Some(h5repack) = hdf5_tool("h5repack_paged_files_read", "h5repack") else {
        return;
    };
    let src = tmp("repack_src.h5");
    interop::run_python(
        &python,
        MAKE,
        &[src.to_str().unwrap(), "default", "0", "0", "earliest"],
    );
    for page in ["4096", "512"] {
        let out = tmp(&format!("h5repack_page_{page}.h5"));
        let status = std::process::Command::new(&h5repack)
            .args(["-S", "PAGE", "-G", page])
            .arg(&src)
            .arg(&out)
            .status()
            .unwrap();
        assert!(status.success(), "h5repack -S PAGE -G {page}");
        check_contents(&out);
        let fs = File::open(&out).unwrap().file_space().unwrap();
        assert!(fs.is_paged());
        assert_eq!(fs.page_size.to_string(), page);
    }
}

/// Another tool of `h5dump`'s package (Debian's hdf5-tools: h5repack, h5stat), beside the
/// `h5dump` the interop convention gives: skipped with it, required with it.
fn hdf5_tool(test: &str, tool: &str) -> Option<PathBuf> {
    let h5dump = interop::h5dump(test)?;
    let path = h5dump.with_file_name(tool);
    assert!(
        path.is_file(),
        "{} (hdf5-tools, beside h5dump)",
        path.display()
    );
    Some(path)
}

/// Write the test contents with h5chunk into a paged file.
fn write_paged(path: &Path, options: FileOptions) {
    let f = File::create_with(path, options).unwrap();
    let a = f
        .new_dataset::<f64>()
        .shape(&[1000])
        .chunk(&[100])
        .filter(FilterSpec::Deflate(4))
        .create("a")
        .unwrap();
    a.write(&(0..1000).map(f64::from).collect::<Vec<_>>())
        .unwrap();
    // One chunk larger than a page: page-aligned, whole pages.
    let b = f
        .new_dataset::<i32>()
        .shape(&[3000])
        .chunk(&[3000])
        .create("b")
        .unwrap();
    b.write(&(0..3000).collect::<Vec<_>>()).unwrap();
    let g = f.create_group("g").unwrap();
    g.attrs().set_scalar("x", 7i64).unwrap();
    g.attrs().set_strs("names", &["one", "two"]).unwrap();
    let c = f
        .new_dataset::<u16>()
        .shape(&[50])
        .chunk(&[8])
        .create("g/c")
        .unwrap();
    c.write(&(0..50).collect::<Vec<_>>()).unwrap();
    f.close().unwrap();
}

#[test]
fn paged_files_we_write_open_in_libhdf5() {
    let python = interop::python("paged_files_we_write_open_in_libhdf5");
    let h5dump = interop::h5dump("paged_files_we_write_open_in_libhdf5");
    let bounds = [
        LibverBounds::default(),
        LibverBounds::new(Libver::V18, Libver::Latest).unwrap(),
        LibverBounds::new(Libver::Latest, Libver::Latest).unwrap(),
    ];
    for (i, bounds) in bounds.into_iter().enumerate() {
        for page in [512u64, 4096, 65536] {
            let name = format!("ours_paged_{i}_{page}.h5");
            let path = tmp(&name);
            write_paged(
                &path,
                FileOptions {
                    bounds,
                    ..FileOptions::paged(page)
                },
            );
            let len = std::fs::metadata(&path).unwrap().len();
            assert_eq!(len % page, 0, "{name}: {len} bytes");
            check_contents(&path);
            let f = File::open(&path).unwrap();
            let report = f.check();
            assert!(
                report.is_clean() && report.skipped.is_empty(),
                "{name}: {report:?}"
            );
            assert!(f.superblock_version() >= 2, "{name}");
            let fs = f.file_space().unwrap();
            assert!(
                fs.is_paged() && !fs.persist && fs.page_size == page,
                "{name}"
            );
            // Metadata pages hold no chunk: every object header's page is free of chunks,
            // and a chunk smaller than a page stays within one.
            let headers: Vec<u64> = ["a", "b", "g/c"]
                .iter()
                .map(|n| f.dataset(n).unwrap().object_address())
                .collect();
            for n in ["a", "b", "g/c"] {
                for ch in f.dataset(n).unwrap().chunks().unwrap() {
                    let (at, size) = (ch.addr.get(), ch.size);
                    if size < page {
                        assert_eq!(at / page, (at + size - 1) / page, "{name} {n}: {at}+{size}");
                    } else {
                        assert_eq!(at % page, 0, "{name} {n}: {at}");
                    }
                    for &h in &headers {
                        assert!(
                            h / page < at / page || h / page > (at + size - 1) / page,
                            "{name} {n}: header {h} in a page of chunk {at}+{size}"
                        );
                    }
                }
            }
            drop(f);
            if let Some(h5dump) = &h5dump
                && i < 2
            {
                interop::h5dump_ok(h5dump, &path);
            }
            let Some(python) = &python else { continue };
            let report = interop::run_python(python, REPORT, &[path.to_str().unwrap()]);
            assert_eq!(report.trim(), format!("1 0 1 {page}"), "{name}");
            let f64le: Vec<u8> = (0..1000).flat_map(|v| f64::from(v).to_le_bytes()).collect();
            assert_eq!(h5py::values_le(python, &path, "a"), f64le, "{name}");
            let i32le: Vec<u8> = (0..3000i32).flat_map(|v| v.to_le_bytes()).collect();
            assert_eq!(h5py::values_le(python, &path, "b"), i32le, "{name}");
            // libhdf5 writes to it with its page buffer on, then reads everything back.
            let out = interop::run_python(
                python,
                r#"
import sys, h5py, numpy as np
path = sys.argv[1]
with h5py.File(path, "r+", page_buf_size=16 * int(sys.argv[2])) as f:
    f.create_dataset("h5py", data=np.arange(5000, dtype="<i8"), chunks=(700,))
    f["g"].attrs["y"] = "added by h5py"
with h5py.File(path, "r", page_buf_size=16 * int(sys.argv[2])) as f:
    assert (f["h5py"][:] == np.arange(5000)).all()
    assert (f["a"][:] == np.arange(1000)).all()
    print(sorted(f["g"].attrs.keys()), int(f["g"].attrs["x"]), [str(s) for s in f["g"].attrs["names"].astype(str)])
"#,
                &[path.to_str().unwrap(), &page.to_string()],
            );
            assert_eq!(out.trim(), "['names', 'x', 'y'] 7 ['one', 'two']", "{name}");
            check_contents(&path);
        }
    }
}

#[test]
fn h5stat_reports_our_paged_files() {
    let Some(h5stat) = hdf5_tool("h5stat_reports_our_paged_files", "h5stat") else {
        return;
    };
    let path = tmp("ours_h5stat.h5");
    write_paged(&path, FileOptions::paged(4096));
    let out = std::process::Command::new(h5stat)
        .arg("-S")
        .arg(&path)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("H5F_FSPACE_STRATEGY_PAGE"), "{text}");
    assert!(text.contains("File space page size: 4096 bytes"), "{text}");
}

#[test]
fn bad_paged_options_are_refused() {
    let path = tmp("refused.h5");
    write_paged(&path, FileOptions::paged(4096));
    for page in [0u64, 511, (1 << 30) + 1] {
        match File::create_with(&path, FileOptions::paged(page)) {
            Err(h5chunk::Error::InvalidArgument { name, .. }) => assert_eq!(name, "page_size"),
            other => panic!("{page}: {other:?}"),
        }
    }
    check_contents_ours(&path);
    let v18 = FileOptions {
        bounds: LibverBounds::new(Libver::Earliest, Libver::V18).unwrap(),
        ..FileOptions::paged(4096)
    };
    assert!(matches!(
        File::create_with(&path, v18),
        Err(h5chunk::Error::InvalidArgument { .. })
    ));
    let swmr = FileOptions {
        swmr_write: true,
        ..FileOptions::paged(4096)
    };
    assert!(matches!(
        File::create_with(&path, swmr),
        Err(h5chunk::Error::Unsupported(_))
    ));
    // Nor SWMR writing later, on a paged file opened for writing or created so.
    let latest = FileOptions {
        bounds: LibverBounds::new(Libver::Latest, Libver::Latest).unwrap(),
        ..FileOptions::paged(4096)
    };
    let f = File::create_with(&path, latest).unwrap();
    assert!(matches!(
        f.start_swmr_write(),
        Err(h5chunk::Error::Unsupported(_))
    ));
    f.close().unwrap();
    assert!(matches!(
        h5chunk::OpenOptions::swmr_write().open(&path),
        Err(h5chunk::Error::Unsupported(_))
    ));
    let f = File::open_rw(&path).unwrap();
    assert!(matches!(
        f.start_swmr_write(),
        Err(h5chunk::Error::Unsupported(_))
    ));
    f.close().unwrap();
    write_paged(&path, FileOptions::paged(4096));
    let no_pages = FileOptions {
        metadata_room: Some(1 << 20),
        ..FileOptions::default()
    };
    assert!(matches!(
        File::create_with(&path, no_pages),
        Err(h5chunk::Error::InvalidArgument { .. })
    ));
    // Refused before anything is truncated: the file is still whole.
    check_contents_ours(&path);
}

/// A storage holding a whole file that serves only its first `limit` bytes: what a reader
/// that fetched only the metadata room has.
#[derive(Debug)]
struct Front {
    inner: h5chunk::storage::MemStorage,
    limit: u64,
}

impl h5chunk::storage::Storage for Front {
    fn read_at(&self, addr: h5chunk_format::Addr, buf: &mut [u8]) -> std::io::Result<()> {
        if addr.get() + buf.len() as u64 > self.limit {
            return Err(std::io::Error::other(format!(
                "{} bytes at {} past the first {} bytes",
                buf.len(),
                addr.get(),
                self.limit
            )));
        }
        self.inner.read_at(addr, buf)
    }
    fn write_at(&self, _: h5chunk_format::Addr, _: &[u8]) -> std::io::Result<()> {
        Err(std::io::Error::other("read-only"))
    }
    fn len(&self) -> std::io::Result<u64> {
        self.inner.len()
    }
    fn set_len(&self, _: u64) -> std::io::Result<()> {
        Err(std::io::Error::other("read-only"))
    }
    fn sync(&self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Every member below `g`, depth-first: each dataset's shape, type and chunk list (its
/// index walked), each group's numeric attribute `n`.
fn walk_all(g: &h5chunk::Group, out: &mut Vec<String>) {
    for (name, kind) in g.members().unwrap() {
        match kind {
            h5chunk::MemberKind::Group => {
                let child = g.group(&name).unwrap();
                let n = child.attr("n").unwrap().value::<i64>().unwrap();
                out.push(format!("{name}/ n={n}"));
                walk_all(&child, out);
            }
            h5chunk::MemberKind::Dataset => {
                let d = g.dataset(&name).unwrap();
                let chunks = d.chunks().unwrap();
                out.push(format!(
                    "{name} {:?} {} {:?} {} chunks",
                    d.shape(),
                    d.dtype().numpy(),
                    d.index_kind(),
                    chunks.len()
                ));
            }
            h5chunk::MemberKind::Other => out.push(name),
        }
    }
}

#[test]
fn metadata_first_files_open_list_and_index_from_their_first_pages() {
    let python = interop::python("metadata_first_files_open_list_and_index_from_their_first_pages");
    // A room the metadata fits in, and one it overflows (later metadata goes past the data
    // written so far: still a valid file, only not all up front).
    for (i, bounds, room, fits) in [
        (0, LibverBounds::default(), 512u64 << 10, true),
        (
            1,
            LibverBounds::new(Libver::Latest, Libver::Latest).unwrap(),
            512 << 10,
            true,
        ),
        (2, LibverBounds::default(), 64 << 10, false),
    ] {
        let name = format!("metadata_first_{i}.h5");
        let path = tmp(&name);
        let f = File::create_with(
            &path,
            FileOptions {
                bounds,
                metadata_room: Some(room),
                ..FileOptions::paged(4096)
            },
        )
        .unwrap();
        // Twenty groups of five datasets (fixed, extensible, v2 B-tree or v1 B-tree, single
        // chunk, deflated), written group after group, with attributes, as an instrument's
        // granule is.
        for gi in 0..20i64 {
            let g = f.create_group(&format!("beam{gi:02}")).unwrap();
            g.attrs().set_scalar("n", gi).unwrap();
            g.attrs().set_str("units", "metres").unwrap();
            let p = format!("beam{gi:02}");
            let v: Vec<f32> = (0..5000).map(|x| (x as f32) + gi as f32).collect();
            let fixed = f
                .new_dataset::<f32>()
                .shape(&[5000])
                .chunk(&[1000])
                .create(&format!("{p}/fixed"))
                .unwrap();
            fixed.write(&v).unwrap();
            let ext = f
                .new_dataset::<f32>()
                .shape(&[0])
                .max_shape(&[None])
                .chunk(&[700])
                .filter(FilterSpec::Deflate(4))
                .create(&format!("{p}/extensible"))
                .unwrap();
            ext.append(&v).unwrap();
            let two = f
                .new_dataset::<i16>()
                .shape(&[0, 40])
                .max_shape(&[None, None])
                .chunk(&[16, 16])
                .create(&format!("{p}/two"))
                .unwrap();
            two.append(&vec![gi as i16; 40 * 50]).unwrap();
            let single = f
                .new_dataset::<u8>()
                .shape(&[300])
                .chunk(&[300])
                .create(&format!("{p}/single"))
                .unwrap();
            single.write(&[gi as u8; 300]).unwrap();
            let shuffled = f
                .new_dataset::<f64>()
                .shape(&[2000])
                .chunk(&[250])
                .filter(FilterSpec::Shuffle)
                .filter(FilterSpec::Deflate(6))
                .create(&format!("{p}/shuffled"))
                .unwrap();
            shuffled
                .write(&(0..2000).map(f64::from).collect::<Vec<_>>())
                .unwrap();
        }
        f.close().unwrap();

        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(bytes.len() as u64 % 4096, 0, "{name}");
        // Everything but raw data within the room: opening, listing every group and its
        // attribute, and walking every chunk index read nothing past it.
        let whole = File::open(&path).unwrap();
        let report = whole.check();
        assert!(
            report.is_clean() && report.skipped.is_empty(),
            "{name}: {report:?}"
        );
        assert_eq!(report.datasets, 100, "{name}");
        let mut want = Vec::new();
        walk_all(&whole.root().unwrap(), &mut want);
        assert_eq!(want.len(), 20 * 6, "{name}: {want:?}");
        let front = Front {
            inner: h5chunk::storage::MemStorage::from_vec(bytes.clone()),
            limit: room,
        };
        if fits {
            let f = h5chunk::OpenOptions::read_only()
                .open_on(std::sync::Arc::new(front))
                .unwrap();
            let mut got = Vec::new();
            walk_all(&f.root().unwrap(), &mut got);
            assert_eq!(got, want, "{name}");
        }
        // And every chunk lies past it.
        for gi in 0..20 {
            for d in ["fixed", "extensible", "two", "single", "shuffled"] {
                let d = whole.dataset(&format!("beam{gi:02}/{d}")).unwrap();
                for c in d.chunks().unwrap() {
                    assert!(
                        c.addr.get() >= room,
                        "{name}: {d:?} chunk at {}",
                        c.addr.get()
                    );
                }
            }
        }
        let v: Vec<f32> = whole.dataset("beam07/fixed").unwrap().read().unwrap();
        assert_eq!(v[4999], 4999.0 + 7.0);
        drop(whole);
        if let Some(python) = &python {
            let out = interop::run_python(
                python,
                r#"
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "r", page_buf_size=1 << 20) as f:
    p = f.id.get_create_plist()
    total = 0
    for gi in range(20):
        g = f["beam%02d" % gi]
        assert g.attrs["n"] == gi and g.attrs["units"] == "metres"
        assert (g["fixed"][:] == np.arange(5000, dtype="f4") + gi).all()
        assert (g["extensible"][:] == np.arange(5000, dtype="f4") + gi).all()
        assert (g["two"][:] == gi).all() and g["two"].shape == (50, 40)
        assert (g["single"][:] == gi).all()
        assert (g["shuffled"][:] == np.arange(2000)).all()
        total += 1
    print(p.get_file_space_strategy()[0], p.get_file_space_page_size(), total)
"#,
                &[path.to_str().unwrap()],
            );
            assert_eq!(out.trim(), "1 4096 20", "{name}");
        }
    }
}

#[test]
fn impossible_page_sizes_read_but_refuse_writes() {
    let path = tmp("page_size_src.h5");
    write_paged(&path, FileOptions::paged(4096));
    let bytes = std::fs::read(&path).unwrap();
    // The message body under the default (earliest) bounds: a version 1 extension header,
    // no checksum. Version 1, paged, not persisting, threshold 1, then the page size.
    let head = [1u8, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0];
    let at = bytes
        .windows(head.len() + 8)
        .position(|w| w[..head.len()] == head && w[head.len()..] == 4096u64.to_le_bytes())
        .expect("the File Space Info message")
        + head.len();
    for bad in [0u64, 100, (1 << 30) + 1, 1 << 50, u64::MAX] {
        let mut b = bytes.clone();
        b[at..at + 8].copy_from_slice(&bad.to_le_bytes());
        let p = tmp(&format!("page_size_{bad}.h5"));
        std::fs::write(&p, &b).unwrap();
        check_contents_ours(&p);
        assert_eq!(File::open(&p).unwrap().file_space().unwrap().page_size, bad);
        match File::open_rw(&p) {
            Err(h5chunk::Error::Corrupt { .. }) => {}
            other => panic!("page size {bad}: {other:?}"),
        }
    }
}

/// What `write_paged` wrote reads back.
fn check_contents_ours(path: &Path) {
    let f = File::open(path).unwrap();
    let a: Vec<f64> = f.dataset("a").unwrap().read().unwrap();
    assert_eq!(a, (0..1000).map(f64::from).collect::<Vec<_>>());
    let c: Vec<u16> = f.dataset("g/c").unwrap().read().unwrap();
    assert_eq!(c, (0..50).collect::<Vec<_>>());
}
