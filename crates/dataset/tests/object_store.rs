//! Files in object storage (`File::open_url`, `ObjectStorage`), against a real S3-compatible
//! server: moto's, started here on a free local port and stopped at the end. The fixtures
//! libhdf5 wrote are uploaded; every dataset h5chunk reads through S3 equals h5py's values of
//! the local file; the GET requests of opening and listing a small file, and of reading cold
//! chunks, are counted and bounded; the CLI lists and reads `s3://` URLs.
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used
)]

#[cfg(not(feature = "object-store"))]
#[test]
fn object_storage_needs_its_feature() {
    use std::io::Write as _;
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED: object storage tests: h5chunk built without the `object-store` feature"
    );
}

#[cfg(feature = "object-store")]
mod s3 {
    use std::path::{Path, PathBuf};
    use std::sync::Arc;

    use h5chunk::storage::{ObjectStorage, READ_AHEAD};
    use h5chunk::{File, Group, MemberKind, OpenOptions};
    use h5chunk_testkit::moto::Moto;
    use h5chunk_testkit::{fixtures, h5py, interop};

    const BUCKET: &str = "h5chunk";

    /// Write `big.h5` (8 MiB in 64 KiB chunks, an extensible array) with h5py.
    const BIG: &str = r#"
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "w", libver="latest") as f:
    f.create_dataset("x", data=np.arange(1 << 20, dtype="<f8"), maxshape=(None,), chunks=(8192,))
"#;

    /// Every dataset under `g`, with its path.
    fn datasets(g: &Group, out: &mut Vec<String>) {
        let Ok(members) = g.members() else {
            return;
        };
        for (name, kind) in members {
            let path = format!("{}/{name}", g.path().trim_end_matches('/'));
            match kind {
                MemberKind::Group => datasets(&g.group(&name).unwrap(), out),
                MemberKind::Dataset => out.push(path),
                MemberKind::Other => {}
            }
        }
    }

    fn open(moto: &Moto, name: &str) -> (Arc<ObjectStorage>, File) {
        let url = format!("s3://{BUCKET}/{name}");
        let storage = Arc::new(ObjectStorage::open(&url, &moto.options()).unwrap());
        let file = OpenOptions::read_only().open_on(storage.clone()).unwrap();
        (storage, file)
    }

    #[test]
    fn files_in_s3_read_as_h5py_reads_them_locally_in_few_requests() {
        let Some(python) = interop::python("files_in_s3_read_as_h5py_reads_them") else {
            return;
        };
        let moto = Moto::start(&python);
        let dir = std::env::temp_dir().join(format!("h5chunk-s3-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let big = dir.join("big.h5");
        let manifest = fixtures::manifest();
        let files: Vec<PathBuf> = manifest["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| fixtures::dir().join(e["file"].as_str().unwrap()))
            .collect();
        interop::run_python(&python, BIG, &[big.to_str().unwrap()]);
        let mut upload: Vec<&Path> = vec![&big];
        upload.extend(files.iter().map(PathBuf::as_path));
        moto.upload(&python, BUCKET, &upload);

        // Every dataset h5chunk reads locally reads the same through S3, equal to h5py's.
        let mut checked = 0;
        for local in &files {
            let name = local.file_name().unwrap().to_str().unwrap();
            let (storage, remote) = open(&moto, name);
            let local_file = File::open(local).unwrap();
            let mut paths = Vec::new();
            datasets(&local_file.root().unwrap(), &mut paths);
            let readable: Vec<(String, Vec<u8>)> = paths
                .iter()
                .filter_map(|p| {
                    // A null dataspace has no values for h5py to give.
                    let d = local_file.dataset(p).ok().filter(|d| !d.is_null())?;
                    Some((p.clone(), d.read_raw().ok()?))
                })
                .collect();
            let names: Vec<&str> = readable.iter().map(|(p, _)| p.as_str()).collect();
            let theirs = h5py::values_le_many(&python, local, &names);
            for ((path, ours_local), theirs) in readable.iter().zip(&theirs) {
                let d = remote.dataset(path).unwrap();
                // Raw reads are little-endian, as h5py's values here.
                let ours = d.read_raw().unwrap();
                assert_eq!(&ours, ours_local, "{name}:{path}");
                assert_eq!(&ours, theirs, "{name}:{path}: h5py");
                checked += 1;
            }
            // Opening and listing a small file: the read-ahead holds it.
            if std::fs::metadata(local).unwrap().len() <= READ_AHEAD {
                let (storage, remote) = open(&moto, name);
                let mut listed = Vec::new();
                datasets(&remote.root().unwrap(), &mut listed);
                for p in &listed {
                    let _ = remote.dataset(p).map(|d| (d.shape(), d.chunk()));
                }
                assert!(
                    storage.requests() <= 3,
                    "{name}: {} GETs to open and list",
                    storage.requests()
                );
            }
            drop(storage);
        }
        assert!(checked > 100, "{checked} datasets");

        // Cold chunks of a large file: one GET a chunk once the index blocks it needs are in.
        let (storage, remote) = open(&moto, "big.h5");
        assert_eq!(storage.requests(), 1);
        let x = remote.dataset("x").unwrap();
        let before = storage.requests();
        let got = x.read_slice::<f64>(&[500_000], &[10], None).unwrap();
        assert_eq!(got, (500_000..500_010).map(f64::from).collect::<Vec<_>>());
        let first = storage.requests() - before;
        assert!(first <= 3, "{first} GETs for the first cold chunk");
        let before = storage.requests();
        let got = x.read_slice::<f64>(&[500_000 + 8192], &[3], None).unwrap();
        assert_eq!(got, [508_192.0, 508_193.0, 508_194.0]);
        assert_eq!(
            storage.requests() - before,
            1,
            "one GET for a neighbour's cold chunk"
        );
        // A selection across many chunks: fetched together, in few requests.
        let before = storage.requests();
        let got = x.read_slice::<f64>(&[100_000], &[200_000], None).unwrap();
        assert_eq!(got[0], 100_000.0);
        assert_eq!(got[199_999], 299_999.0);
        let many = storage.requests() - before;
        assert!(many <= 10, "{many} GETs for 25 chunks");
        eprintln!(
            "object storage: {checked} datasets equal to h5py's; big.h5 cold chunk: {first} \
             GETs, neighbour: 1, 25 chunks: {many}"
        );

        // The URL entry point, and a missing object.
        let f = OpenOptions::read_only()
            .open_url(&format!("s3://{BUCKET}/big.h5"), &moto.options())
            .unwrap();
        assert_eq!(f.dataset("x").unwrap().shape(), vec![1 << 20]);
        assert!(
            OpenOptions::read_only()
                .open_url(&format!("s3://{BUCKET}/missing.h5"), &moto.options())
                .is_err()
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
