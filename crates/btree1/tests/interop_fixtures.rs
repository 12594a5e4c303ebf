//! v1 B-trees written by libhdf5 (the fixtures of `cargo xtask gen-fixtures`): every chunk
//! index of node type 1 decodes through [`ChunkTree`], with the chunk count the manifest states
//! and every record equal to the manifest's `chunk_records` and to what h5py reports; every
//! old-style group decodes through [`Group`] with the links the manifest lists.
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used
)]

use std::collections::{BTreeMap, BTreeSet};

use h5chunk_btree1::{ChunkTree, Group};
use h5chunk_cache::CacheConfig;
use h5chunk_format::message::Message;
use h5chunk_format::object_header::ObjectHeader;
use h5chunk_format::symbol_table_entry::Cache;
use h5chunk_format::{Addr, Error as FormatError};
use h5chunk_testkit::{H5File, fixtures, h5py, interop};
use serde_json::Value;

fn is_userblock(entry: &Value) -> bool {
    // Moved files (bytes put in front) report their offset as the userblock size.
    entry["userblock_size"].as_u64() != Some(0)
}

#[test]
fn libhdf5_chunk_trees_match_the_manifest_and_h5py() {
    let python = interop::python("libhdf5_chunk_trees_match_the_manifest_and_h5py");
    let list = fixtures::datasets(|e, o| o["index_type"] == "btree1" && !is_userblock(e));
    assert!(list.len() >= 10, "only {} btree1 fixtures", list.len());
    let mut depths = BTreeSet::new();
    let mut compared_with_h5py = 0;
    for fx in &list {
        let what = format!("{}:{}", fx.file.display(), fx.path());
        let f = H5File::open(&fx.file);
        let ds = f.dataset(fx.path());
        let layout = ds.chunked();
        // From the manifest: a v2/v3 superblock keeps a non-default K in its extension,
        // which the testkit's reader does not read.
        let k = fx.entry["istore_k"].as_u64().unwrap() as u16;
        let cache = f.cache(CacheConfig::default());
        let chunks = match layout.address {
            None => Vec::new(),
            Some(root) => {
                let tree = ChunkTree::open(&cache, root, f.sizes(), k, &layout.dims)
                    .unwrap_or_else(|e| panic!("{what}: {e}"));
                depths.insert(tree.depth(&cache).unwrap());
                let chunks = tree
                    .to_vec(&cache)
                    .unwrap_or_else(|e| panic!("{what}: {e}"));
                // Every chunk is found by a lookup, and off-grid neighbours are not chunks.
                for c in &chunks {
                    assert_eq!(
                        tree.get(&cache, c.offsets.as_slice()).unwrap().as_ref(),
                        Some(c),
                        "{what}"
                    );
                }
                chunks
            }
        };
        assert_eq!(
            chunks.len() as u64,
            fx.object["chunks_allocated"].as_u64().unwrap(),
            "{what}: chunk count"
        );
        // Key order is strictly increasing.
        for w in chunks.windows(2) {
            assert!(w[0].offsets < w[1].offsets, "{what}: keys out of order");
        }
        if let Some(records) = fx.object["chunk_records"].as_array() {
            assert_eq!(records.len(), chunks.len(), "{what}");
            for (r, c) in records.iter().zip(&chunks) {
                let offsets: Vec<u64> = r["offset"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_u64().unwrap())
                    .collect();
                assert_eq!(offsets, c.offsets.to_vec(), "{what}");
                assert_eq!(r["address"].as_u64(), Some(c.addr.get()), "{what}");
                assert_eq!(r["size"].as_u64(), Some(u64::from(c.size)), "{what}");
                assert_eq!(
                    r["filter_mask"].as_u64(),
                    Some(u64::from(c.filter_mask)),
                    "{what}"
                );
            }
        }
        if let Some(python) = &python {
            let infos = h5py::chunks(python, &fx.file, fx.path());
            assert_eq!(infos.len(), chunks.len(), "{what}: h5py chunk count");
            let mut by_offset: BTreeMap<Vec<u64>, _> = BTreeMap::new();
            for i in infos {
                by_offset.insert(i.offset.clone(), i);
            }
            for c in &chunks {
                let i = by_offset
                    .get(c.offsets.as_slice())
                    .unwrap_or_else(|| panic!("{what}: h5py lacks {:?}", c.offsets));
                assert_eq!(i.addr, Some(c.addr.get()), "{what}");
                assert_eq!(i.size, u64::from(c.size), "{what}");
                assert_eq!(i.mask, c.filter_mask, "{what}");
            }
            compared_with_h5py += 1;
        }
    }
    // Lone leaves and two-level trees (K = 32 with 250 chunks, K = 8 with 500) are covered.
    assert!(
        depths.contains(&1) && depths.contains(&2),
        "depths {depths:?}"
    );
    if python.is_some() {
        assert_eq!(compared_with_h5py, list.len());
    }
}

/// The Symbol Table message of the object header at `at`.
fn symbol_table(f: &H5File, at: Addr) -> Option<(Addr, Addr)> {
    let storage = f.storage();
    let h = ObjectHeader::read(at, f.sizes(), |a, len| -> Result<Vec<u8>, FormatError> {
        let mut buf = vec![0u8; len as usize];
        let n = storage.len().unwrap_or(0).saturating_sub(a.get()).min(len) as usize;
        storage.read_at(a, &mut buf[..n]).unwrap();
        buf.truncate(n);
        Ok(buf)
    })
    .unwrap();
    h.messages().find_map(
        |raw| match Message::decode(raw.kind, &raw.data, at, f.sizes()) {
            Ok(Message::SymbolTable(st)) => Some((st.btree_address, st.local_heap_address)),
            _ => None,
        },
    )
}

fn walk(f: &H5File, path: &str, btree: Addr, heap: Addr, found: &mut BTreeSet<String>) {
    let sb = f.superblock();
    let cache = f.cache(CacheConfig::default());
    let g = Group::open(
        &cache,
        btree,
        heap,
        f.sizes(),
        sb.group_internal_k(),
        sb.group_leaf_k(),
    )
    .unwrap_or_else(|e| panic!("{path}: {e}"));
    let links = g.to_vec(&cache).unwrap();
    for w in links.windows(2) {
        assert!(w[0].name < w[1].name, "{path}: links out of order");
    }
    for l in links {
        let name = String::from_utf8(l.name.clone()).unwrap();
        let child = if path == "/" {
            format!("/{name}")
        } else {
            format!("{path}/{name}")
        };
        assert_eq!(
            g.get(&cache, &l.name).unwrap().as_ref(),
            Some(&l.entry),
            "{child}"
        );
        found.insert(child.clone());
        let sub = match l.entry.cache() {
            Cache::SymbolTable {
                btree: Some(b),
                heap: Some(h),
            } => Some((b, h)),
            _ => l.entry.object_header.and_then(|oh| symbol_table(f, oh)),
        };
        if let Some((b, h)) = sub {
            walk(f, &child, b, h, found);
        }
    }
    assert_eq!(g.get(&cache, b"no such link").unwrap(), None);
}

#[test]
fn libhdf5_old_style_groups_list_every_link() {
    let manifest = fixtures::manifest();
    let mut groups_seen = 0;
    for entry in manifest["files"].as_array().unwrap() {
        let objects = entry["objects"].as_array().unwrap();
        let storage: BTreeMap<&str, &str> = objects
            .iter()
            .filter(|o| o["kind"] == "group")
            .map(|o| {
                (
                    o["path"].as_str().unwrap(),
                    o["storage"].as_str().unwrap_or(""),
                )
            })
            .collect();
        if storage.get("/") != Some(&"symbol_table") || is_userblock(entry) {
            continue;
        }
        let file = fixtures::dir().join(entry["file"].as_str().unwrap());
        let f = H5File::open(&file);
        let Some((btree, heap)) = symbol_table(&f, f.superblock().root_object_header().unwrap())
        else {
            panic!("{}: root has no symbol table", file.display());
        };
        let mut found = BTreeSet::new();
        walk(&f, "/", btree, heap, &mut found);
        // Every object whose parent is an old-style group was found, and nothing else.
        let expected: BTreeSet<String> = objects
            .iter()
            .map(|o| o["path"].as_str().unwrap().to_owned())
            .filter(|p| {
                let parent = match p.rfind('/') {
                    Some(0) => "/",
                    Some(i) => &p[..i],
                    None => return false,
                };
                p != "/" && storage.get(parent) == Some(&"symbol_table")
            })
            .collect();
        let found_in_scope: BTreeSet<String> = found
            .iter()
            .filter(|p| {
                let parent = match p.rfind('/') {
                    Some(0) => "/",
                    Some(i) => &p[..i],
                    None => "",
                };
                storage.get(parent) == Some(&"symbol_table")
            })
            .cloned()
            .collect();
        assert_eq!(found_in_scope, expected, "{}", file.display());
        groups_seen += storage.values().filter(|s| **s == "symbol_table").count();
    }
    assert!(groups_seen >= 5, "{groups_seen} old-style groups");
}
