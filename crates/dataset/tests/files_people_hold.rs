//! Files nobody on this project wrote: the test files PyTables ships inside its wheel (HDF5 1.4
//! to 1.14, several platforms, lzo/bzip2/szip/blosc filters) and h5py's own test data files.
//! Nothing of them is committed: the test has the venv's pip download the pinned wheel into
//! `target/`, and extracts the `.h5` files under `target/fixtures/pytables/` (h5py's go to
//! `target/fixtures/h5py-tests/`), once.
//!
//! For every file: h5chunk lists every object h5py lists (through the public API, as `h5chunk
//! ls` walks), and every dataset h5py reads, h5chunk reads equal (numbers as little-endian
//! values, other fixed-size types as the file's bytes, variable-length strings as strings),
//! or refuses with a typed error whose cause is in [`ALLOWED`] (filters another piece of work
//! adds, and what is still refused, each with its reason). A printed summary counts datasets
//! read equal and refusals by cause.
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used
)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use h5chunk::filters::FilterError;
use h5chunk::{File, Group, MemberKind};
use h5chunk_testkit::interop;
use serde_json::Value;

/// The PyTables wheel whose `tables/tests/*.h5` are the corpus (abi3: one wheel for every
/// CPython the venv may have).
const TABLES: &str = "tables==3.11.1";

/// Refusal causes the sweep accepts, each with why; any other cause fails the test.
const ALLOWED: &[(&str, &str)] = &[
    // Every filter of the corpus is read now (szip, LZO, bzip2, Blosc, Blosc2): none.
];

const FETCH: &str = r#"
import sys, os, glob, zipfile, shutil, subprocess, h5py
pin, wheel_dir, out = sys.argv[1:4]
pt = os.path.join(out, 'pytables')
hp = os.path.join(out, 'h5py-tests')
if not glob.glob(os.path.join(pt, '*.h5')):
    version = pin.split('==')[1]
    wheels = glob.glob(os.path.join(wheel_dir, 'tables-%s-*.whl' % version))
    if not wheels:
        subprocess.check_call([sys.executable, '-m', 'pip', 'download', '--quiet', '--no-deps',
                               '--only-binary=:all:', '--dest', wheel_dir, pin])
        wheels = glob.glob(os.path.join(wheel_dir, 'tables-%s-*.whl' % version))
    os.makedirs(pt, exist_ok=True)
    with zipfile.ZipFile(sorted(wheels)[0]) as z:
        for n in z.namelist():
            if n.startswith('tables/tests/') and n.endswith('.h5'):
                with open(os.path.join(pt, os.path.basename(n)), 'wb') as fh:
                    fh.write(z.read(n))
os.makedirs(hp, exist_ok=True)
for f in glob.glob(os.path.join(os.path.dirname(h5py.__file__), 'tests', 'data_files', '*.h5')):
    shutil.copy(f, hp)
"#;

/// h5py's view of one file: its objects (path, kind) and, per dataset, how it reads.
const DUMP: &str = r#"
import sys, os, json, h5py, numpy as np
try:
    # With hdf5plugin in the venv, h5py reads the Blosc, bzip2, LZ4, Zstd... datasets too, and
    # h5chunk must read those equal or name the filter.
    import hdf5plugin
except ImportError:
    pass
path, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
objects, datasets = [], []
def child(g, name):
    return '/' + name if g == '/' else g + '/' + name
def dataset(obj, p):
    rec = {'path': p}
    try:
        dt = obj.dtype
        rec['shape'] = None if obj.shape is None else list(obj.shape)
        data = os.path.join(out, '%d.bin' % len(datasets))
        if obj.shape is None:
            rec['mode'] = 'empty'
        elif dt.kind in 'iufb' and dt.subdtype is None and dt.names is None:
            a = np.ascontiguousarray(obj[()])
            open(data, 'wb').write(a.astype(dt.newbyteorder('<')).tobytes())
            rec['mode'] = 'le'
        elif dt.kind == 'O' and h5py.check_string_dtype(dt) is not None:
            flat = np.asarray(obj[()], dtype=object).reshape(-1)
            s = [x.decode('utf-8', 'replace') if isinstance(x, bytes) else str(x) for x in flat]
            open(data, 'w').write(json.dumps(s))
            rec['mode'] = 'strings'
        elif dt.hasobject:
            obj[()]
            rec['mode'] = 'vlen'
        else:
            tid = obj.id.get_type()
            n = obj.id.get_space().get_simple_extent_npoints()
            buf = np.zeros(n * tid.get_size(), dtype=np.uint8)
            if n:
                obj.id.read(h5py.h5s.ALL, h5py.h5s.ALL, buf, mtype=tid)
            open(data, 'wb').write(buf.tobytes())
            rec['mode'] = 'raw'
        rec['data'] = data
    except Exception as e:
        rec['h5py_error'] = '%s: %s' % (type(e).__name__, e)
    datasets.append(rec)
def walk(g, gpath, seen):
    try:
        names = list(g.keys())
    except Exception as e:
        objects.append([gpath, 'unlisted'])
        return
    for name in names:
        p = child(gpath, name)
        try:
            link = g.get(name, getlink=True)
            if isinstance(link, (h5py.SoftLink, h5py.ExternalLink)):
                objects.append([p, 'other'])
                continue
            obj = g[name]
        except Exception as e:
            objects.append([p, 'unopened'])
            continue
        if isinstance(obj, h5py.Group):
            objects.append([p, 'group'])
            key = h5py.h5o.get_info(obj.id).token if hasattr(h5py.h5o.get_info(obj.id), 'token') else obj.id.__hash__()
            if key not in seen:
                seen.add(key)
                walk(obj, p, seen)
        elif isinstance(obj, h5py.Dataset):
            objects.append([p, 'dataset'])
            dataset(obj, p)
        else:
            objects.append([p, 'other'])
try:
    with h5py.File(path, 'r') as f:
        walk(f, '/', set())
    print(json.dumps({'objects': objects, 'datasets': datasets}))
except Exception as e:
    print(json.dumps({'file_error': '%s: %s' % (type(e).__name__, e)}))
"#;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The corpus files, fetched on first use.
fn corpus(python: &Path) -> Vec<PathBuf> {
    let target = workspace().join("target");
    let out = target.join("fixtures");
    let wheels = target.join("pytables-wheel");
    interop::run_python(
        python,
        FETCH,
        &[TABLES, &wheels.to_string_lossy(), &out.to_string_lossy()],
    );
    let mut files = Vec::new();
    for dir in ["pytables", "h5py-tests"] {
        for e in std::fs::read_dir(out.join(dir)).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "h5") {
                files.push(p);
            }
        }
    }
    files.sort();
    files
}

/// The cause a refusal is counted under: an unknown filter by its id, a typed `Unsupported` by
/// what it names, anything else by its message (which then fails the sweep unless allowed).
fn cause(e: &h5chunk::Error) -> String {
    let mut s: Option<&dyn std::error::Error> = Some(e);
    while let Some(x) = s {
        if let Some(FilterError::Unknown { id, .. }) = x.downcast_ref::<FilterError>() {
            return format!("filter {id}");
        }
        s = x.source();
    }
    match e {
        h5chunk::Error::Unsupported(what) => (*what).to_owned(),
        h5chunk::Error::Format(h5chunk_format::Error::Unsupported { what, .. }) => {
            (*what).to_owned()
        }
        other => without_addresses(&other.to_string()),
    }
}

/// `text` without its ` @ 0x...` file addresses, so one cause counts once across files.
fn without_addresses(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find(" @ 0x") {
        out.push_str(&rest[..i]);
        rest = rest[i + 5..].trim_start_matches(|c: char| c.is_ascii_hexdigit());
    }
    out.push_str(rest);
    out
}

/// h5chunk's listing below `g`, as `h5chunk ls` walks: (path, kind), or the cause the walk
/// stopped at a member.
fn list(
    g: &Group,
    out: &mut BTreeMap<String, String>,
    seen: &mut BTreeSet<u64>,
    refused: &mut Vec<(String, String)>,
) {
    let members = match g.members() {
        Ok(m) => m,
        Err(e) => {
            refused.push((g.path().to_owned(), cause(&e)));
            return;
        }
    };
    for (name, kind) in members {
        let path = if g.path() == "/" {
            format!("/{name}")
        } else {
            format!("{}/{name}", g.path())
        };
        match kind {
            MemberKind::Group => match g.group(&name) {
                Ok(sub) => {
                    out.insert(path, "group".into());
                    if seen.insert(sub.object_address()) {
                        list(&sub, out, seen, refused);
                    }
                }
                Err(e) => refused.push((path, cause(&e))),
            },
            MemberKind::Dataset => {
                out.insert(path, "dataset".into());
            }
            _ => {
                out.insert(path, "other".into());
            }
        }
    }
}

#[derive(Default, Debug)]
struct Tally {
    files: usize,
    files_listed: usize,
    datasets_h5py_reads: usize,
    equal: usize,
    /// Opened and read by h5chunk; h5py's values are variable-length sequences, not compared.
    read_not_compared: usize,
    refused: BTreeMap<String, Vec<String>>,
    h5py_refuses: BTreeMap<String, usize>,
    wrong: Vec<String>,
    /// Files h5chunk does not list whole, by the cause of the first refusal.
    not_listed: BTreeMap<String, Vec<String>>,
    /// Objects h5py lists and h5chunk does not (nor refuses with a cause): always a failure.
    missing: Vec<String>,
}

fn sweep_file(python: &Path, file: &Path, scratch: &Path, t: &mut Tally) {
    let name = file.file_name().unwrap().to_string_lossy().into_owned();
    let out = scratch.join(&name);
    let text = interop::run_python(
        python,
        DUMP,
        &[&file.to_string_lossy(), &out.to_string_lossy()],
    );
    let theirs: Value = serde_json::from_str(&text).unwrap();
    t.files += 1;
    if let Some(e) = theirs["file_error"].as_str() {
        *t.h5py_refuses.entry(format!("file: {e}")).or_default() += 1;
        // h5chunk must still answer with an error, not a panic.
        let _ = File::open(file);
        return;
    }
    let f = match File::open(file) {
        Ok(f) => f,
        Err(e) => {
            let c = cause(&e);
            t.not_listed
                .entry(c.clone())
                .or_default()
                .push(name.clone());
            for d in theirs["datasets"].as_array().unwrap() {
                if d["h5py_error"].is_null() {
                    t.datasets_h5py_reads += 1;
                    t.refused.entry(c.clone()).or_default().push(name.clone());
                }
            }
            return;
        }
    };
    // The listing.
    let mut ours = BTreeMap::new();
    let mut refused = Vec::new();
    let root = f.root().unwrap();
    list(
        &root,
        &mut ours,
        &mut BTreeSet::from([root.object_address()]),
        &mut refused,
    );
    for o in theirs["objects"].as_array().unwrap() {
        let (path, kind) = (o[0].as_str().unwrap(), o[1].as_str().unwrap());
        if kind == "unlisted" || kind == "unopened" {
            continue;
        }
        // Below a group h5chunk refused to list: counted under that refusal's cause.
        let under_refused = refused
            .iter()
            .any(|(r, _)| path == r || path.starts_with(&format!("{}/", r.trim_end_matches('/'))));
        if ours.get(path).map(String::as_str) != Some(kind) && !under_refused {
            t.missing.push(format!(
                "{name}:{path}: h5py {kind}, h5chunk {:?}",
                ours.get(path)
            ));
        }
    }
    match refused.first() {
        None => t.files_listed += 1,
        Some((_, c)) => t
            .not_listed
            .entry(c.clone())
            .or_default()
            .push(name.clone()),
    }
    // The values.
    for d in theirs["datasets"].as_array().unwrap() {
        let path = d["path"].as_str().unwrap();
        let what = format!("{name}:{path}");
        if let Some(e) = d["h5py_error"].as_str() {
            *t.h5py_refuses.entry(e.to_owned()).or_default() += 1;
            // h5chunk may refuse too, or read: only a panic would fail here.
            if let Ok(ds) = f.dataset(path) {
                let _ = ds.read_raw();
            }
            continue;
        }
        t.datasets_h5py_reads += 1;
        let mode = d["mode"].as_str().unwrap();
        let got = f.dataset(path).and_then(|ds| {
            let shape: Option<Vec<u64>> = d["shape"]
                .as_array()
                .map(|s| s.iter().map(|v| v.as_u64().unwrap()).collect());
            if let Some(shape) = &shape
                && &ds.shape() != shape
            {
                return Ok(Err(format!("shape {:?}, h5py {shape:?}", ds.shape())));
            }
            Ok(match mode {
                "empty" if ds.is_null() => Ok(()),
                "empty" => Err(format!("h5py.Empty, h5chunk shape {:?}", ds.shape())),
                "vlen" => ds.read_raw().map(|_| ()).map_err(|e| format!("{e}")),
                "strings" => {
                    let want: Vec<String> = serde_json::from_str(
                        &std::fs::read_to_string(d["data"].as_str().unwrap()).unwrap(),
                    )
                    .unwrap();
                    let have = ds.read_strings()?;
                    if have == want {
                        Ok(())
                    } else {
                        Err(format!("strings {have:?} != h5py {want:?}"))
                    }
                }
                _ => {
                    let want = std::fs::read(d["data"].as_str().unwrap()).unwrap();
                    let have = ds.read_raw()?;
                    if have == want {
                        Ok(())
                    } else {
                        Err(format!(
                            "{} bytes != h5py's {} bytes ({mode})",
                            have.len(),
                            want.len()
                        ))
                    }
                }
            })
        });
        match got {
            Ok(Ok(())) if mode == "vlen" => t.read_not_compared += 1,
            Ok(Ok(())) => t.equal += 1,
            Ok(Err(wrong)) => t.wrong.push(format!("{what}: {wrong}")),
            Err(e) => t.refused.entry(cause(&e)).or_default().push(what),
        }
    }
}

#[test]
fn every_file_people_hold_lists_and_reads_equal_or_names_its_filter() {
    let Some(python) =
        interop::python("every_file_people_hold_lists_and_reads_equal_or_names_its_filter")
    else {
        return;
    };
    let files = corpus(&python);
    assert!(files.len() >= 40, "only {} corpus files", files.len());
    let scratch = std::env::temp_dir().join(format!("h5chunk-people-{}", std::process::id()));
    let mut t = Tally::default();
    for file in &files {
        sweep_file(&python, file, &scratch, &mut t);
    }
    let _ = std::fs::remove_dir_all(&scratch);
    println!(
        "files {} (listed whole by h5chunk: {}); datasets h5py reads: {}; h5chunk reads equal: \
         {}; read, variable-length values not compared: {}; refused: {}",
        t.files,
        t.files_listed,
        t.datasets_h5py_reads,
        t.equal,
        t.read_not_compared,
        t.refused.values().map(Vec::len).sum::<usize>()
    );
    for (c, list) in &t.refused {
        println!("  refused ({}): {c}: {list:?}", list.len());
    }
    for (c, n) in &t.h5py_refuses {
        println!("  h5py refuses ({n}): {c}");
    }
    for (c, files) in &t.not_listed {
        println!("  not listed whole ({}): {c}: {files:?}", files.len());
    }
    for m in &t.missing {
        println!("  MISSING: {m}");
    }
    for w in &t.wrong {
        println!("  WRONG: {w}");
    }
    assert!(
        t.wrong.is_empty(),
        "values differ from h5py's: {:?}",
        t.wrong
    );
    let allowed: BTreeSet<&str> = ALLOWED.iter().map(|(c, _)| *c).collect();
    let unexpected: Vec<&String> = t
        .refused
        .keys()
        .filter(|c| !allowed.contains(c.as_str()))
        .collect();
    assert!(
        unexpected.is_empty(),
        "refusals of causes not allowed: {unexpected:?}"
    );
    assert!(t.missing.is_empty(), "objects not listed: {:?}", t.missing);
    let unlisted: Vec<&String> = t
        .not_listed
        .keys()
        .filter(|c| !allowed.contains(c.as_str()))
        .collect();
    assert!(
        unlisted.is_empty(),
        "files not listed whole, by cause: {unlisted:?}"
    );
}
