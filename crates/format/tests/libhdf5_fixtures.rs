//! Every structure this crate decodes, checked against files libhdf5 wrote (the fixtures of
//! `cargo xtask gen-fixtures`, see `fixtures/README.md`).
//!
//! From each file's superblock the walk reaches every object header (and continuation chunk),
//! every message, every old-style group's local heap, group B-tree nodes and symbol table nodes,
//! and every chunk index: v1 B-tree nodes, fixed arrays (header, data block, pages), extensible
//! arrays (header, index block, super blocks, data blocks, pages) and v2 B-trees (header,
//! internal nodes, leaves). Each structure is decoded and re-encoded, and the re-encoding must
//! equal the file's bytes (messages: after zero-padding to the stored size, as version 1 object
//! headers pad). The manifest then says what the walk must have found: every object at its
//! path, with its object header version and chunk count, layout version, index type and number
//! of allocated chunks.
//!
//! Fixtures: `H5CHUNK_FIXTURES` (the full generated set, set by `cargo xtask test`), else the
//! committed subset in `fixtures/libhdf5`.
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used
)]

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;

use h5chunk_format::btree1::{ChunkNode, GroupNode};
use h5chunk_format::chunk_record::{RecordCodec, chunk_size_len};
use h5chunk_format::local_heap::{LocalHeap, LocalHeapData};
use h5chunk_format::message::{
    Attribute, ChunkIndex, ChunkedLayout, DataLayout, Datatype, LayoutVersion, LinkTarget, Message,
    MessageType,
};
use h5chunk_format::object_header::{MessageFlags, ObjectHeader};
use h5chunk_format::superblock::{self, Superblock};
use h5chunk_format::symbol_table_node::SymbolTableNode;
use h5chunk_format::{Addr, Error, Sizes, btree2, earray, farray};
use serde_json::Value;

fn fixtures_dir() -> PathBuf {
    match std::env::var_os("H5CHUNK_FIXTURES").filter(|v| !v.is_empty()) {
        Some(dir) => dir.into(),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/libhdf5"),
    }
}

/// What one object looked like on disk.
#[derive(Debug, Default)]
struct Found {
    header_version: u8,
    header_chunks: usize,
    layout_version: Option<u8>,
    index: Option<&'static str>,
    chunks_allocated: Option<u64>,
    element_size: Option<u32>,
}

#[derive(Debug, Default)]
struct Totals {
    superblocks: HashSet<u8>,
    header_versions: HashSet<u8>,
    continuation_chunks: usize,
    messages: BTreeMap<&'static str, usize>,
    layout_versions: HashSet<u8>,
    group_nodes: usize,
    snods: usize,
    heaps: usize,
    btree1_nodes: usize,
    btree1_max_level: u8,
    farray_pages: usize,
    earray_blocks: BTreeMap<&'static str, usize>,
    earray_pages: usize,
    btree2_nodes: usize,
    btree2_max_depth: u16,
}

struct Walker<'a> {
    file: &'a [u8],
    name: &'a str,
    sb: Superblock,
    istore_k: u16,
    visited: HashMap<Addr, String>,
    found: BTreeMap<String, Found>,
    totals: &'a mut Totals,
}

impl Walker<'_> {
    fn sizes(&self) -> Sizes {
        self.sb.sizes
    }

    /// `len` bytes at relative address `a`, which must lie inside the file.
    fn bytes(&self, a: Addr, len: u64) -> &[u8] {
        let start = self.sb.base_address + a.get();
        let end = start + len;
        assert!(
            end <= self.file.len() as u64,
            "{}: {len} bytes at {a} run past the end of the file",
            self.name
        );
        &self.file[start as usize..end as usize]
    }

    /// Assert that `encode` reproduces the `len` file bytes at `a`.
    fn same(&self, what: &str, a: Addr, encoded: &[u8]) {
        assert_eq!(
            self.bytes(a, encoded.len() as u64),
            encoded,
            "{}: {what} @ {a} does not re-encode identically",
            self.name
        );
    }

    /// The datatype a named datatype's object header at `t` holds.
    fn named_datatype(&self, t: Addr) -> Option<Datatype> {
        let (file, base) = (self.file, self.sb.base_address);
        let h = ObjectHeader::read(t, self.sizes(), |at, len| -> Result<Vec<u8>, Error> {
            let start = ((base + at.get()) as usize).min(file.len());
            let end = start.saturating_add(len as usize).min(file.len());
            Ok(file[start..end].to_vec())
        })
        .ok()?;
        h.messages().find_map(
            |m| match Message::decode(m.kind, &m.data, t, self.sizes()) {
                Ok(Message::Datatype(dt)) => Some(dt),
                _ => None,
            },
        )
    }

    fn object(&mut self, a: Addr, path: String) {
        if let Some(first) = self.visited.get(&a) {
            // A second hard link to the same object: record the alias, do not walk it again.
            let _ = first;
            return;
        }
        self.visited.insert(a, path.clone());
        let (file, base) = (self.file, self.sb.base_address);
        let h = ObjectHeader::read(a, self.sizes(), |at, len| -> Result<Vec<u8>, Error> {
            let start = ((base + at.get()) as usize).min(file.len());
            let end = start.saturating_add(len as usize).min(file.len());
            Ok(file[start..end].to_vec())
        })
        .unwrap_or_else(|e| panic!("{}: object header of {path}: {e}", self.name));
        self.totals.header_versions.insert(h.version());
        self.totals.continuation_chunks += h.chunk_count() - 1;
        for (at, bytes) in h.encode_chunks().unwrap() {
            self.same("object header chunk", at, &bytes);
        }
        let mut found = Found {
            header_version: h.version(),
            header_chunks: h.chunk_count(),
            ..Found::default()
        };
        let mut children = Vec::new();
        let mut layout = None;
        let mut filtered = false;
        for raw in h.messages() {
            if raw.flags.contains(MessageFlags::SHARED) {
                // A reference to a committed datatype's header: it decodes as a reference.
                let mut d = h5chunk_format::cursor::Decoder::new(&raw.data, a, self.sizes(), "x");
                let r = h5chunk_format::message::SharedMessage::decode(&mut d).unwrap();
                let h5chunk_format::message::SharedMessage::Committed(t) = r else {
                    panic!("{}: {path}: {r:?}", self.name);
                };
                *self.totals.messages.entry("shared reference").or_default() += 1;
                // The named datatype's own header holds the message.
                let (file, base) = (self.file, self.sb.base_address);
                let th = ObjectHeader::read(t, self.sizes(), |at, len| -> Result<Vec<u8>, Error> {
                    let start = ((base + at.get()) as usize).min(file.len());
                    let end = start.saturating_add(len as usize).min(file.len());
                    Ok(file[start..end].to_vec())
                })
                .unwrap();
                let tm = th.messages().find(|m| m.kind == raw.kind).unwrap();
                if let Ok(Message::Datatype(dt)) =
                    Message::decode(tm.kind, &tm.data, t, self.sizes())
                {
                    found.element_size = Some(dt.size);
                }
                continue;
            }
            let decoded = if raw.kind == MessageType::ATTRIBUTE {
                // An attribute of a named type: its datatype from the named type's header.
                let mut d = h5chunk_format::cursor::Decoder::new(&raw.data, a, self.sizes(), "x");
                let mut resolve = |t: Addr| self.named_datatype(t);
                Attribute::decode_resolving(&mut d, &mut resolve).map(Message::Attribute)
            } else {
                Message::decode(raw.kind, &raw.data, a, self.sizes())
            };
            let m = match decoded {
                Ok(m) => m,
                Err(e) => panic!("{}: {path}: message {:?}: {e}", self.name, raw.kind),
            };
            let mut out = Vec::new();
            m.encode(self.sizes(), &mut out).unwrap();
            assert!(
                out.len() <= raw.data.len(),
                "{}: {path}: {:?} grew",
                self.name,
                raw.kind
            );
            out.resize(raw.data.len(), 0);
            assert_eq!(
                out, raw.data,
                "{}: {path}: {:?} re-encodes differently",
                self.name, raw.kind
            );
            *self.totals.messages.entry(raw.kind.name()).or_default() += 1;
            match m {
                Message::SymbolTable(st) => {
                    let names = self.heap(st.local_heap_address);
                    for (name_off, child) in self.group_tree(st.btree_address) {
                        let name = names.name(name_off).unwrap();
                        children.push((String::from_utf8_lossy(name).into_owned(), child));
                    }
                }
                Message::Link(l) => {
                    if let LinkTarget::Hard(t) = l.target {
                        children.push((String::from_utf8_lossy(&l.name).into_owned(), t));
                    }
                }
                Message::Datatype(t) => found.element_size = Some(t.size),
                Message::FilterPipeline(p) => filtered = !p.filters.is_empty(),
                Message::DataLayout(l) => {
                    self.totals.layout_versions.insert(l.version());
                    found.layout_version = Some(l.version());
                    layout = Some(l);
                }
                _ => {}
            }
        }
        if let Some(DataLayout::Chunked(c)) = layout {
            let (kind, n) = self.chunk_index(&c, filtered);
            found.index = Some(kind);
            found.chunks_allocated = n;
        }
        self.found.insert(path.clone(), found);
        for (name, child) in children {
            let p = if path == "/" {
                format!("/{name}")
            } else {
                format!("{path}/{name}")
            };
            self.object(child, p);
        }
    }

    fn heap(&mut self, a: Addr) -> LocalHeapData {
        let s = self.sizes();
        let h = LocalHeap::decode(self.bytes(a, LocalHeap::encoded_len(s) as u64), a, s).unwrap();
        let mut out = Vec::new();
        h.encode(s, &mut out).unwrap();
        self.same("HEAP", a, &out);
        let data = self.bytes(h.data_segment_address, h.data_segment_size);
        let d = LocalHeapData::decode(data, h.data_segment_address, s, h.free_list_head).unwrap();
        self.totals.heaps += 1;
        d
    }

    /// The (name offset, object header) of every entry under a group B-tree node.
    fn group_tree(&mut self, a: Addr) -> Vec<(u64, Addr)> {
        let (s, k) = (self.sizes(), self.sb.group_internal_k());
        let node = GroupNode::decode(
            self.bytes(a, GroupNode::encoded_len(s, k, ()) as u64),
            a,
            s,
            k,
            (),
        )
        .unwrap_or_else(|e| panic!("{}: group TREE: {e}", self.name));
        let mut out = Vec::new();
        node.encode(s, k, (), &mut out).unwrap();
        self.same("group TREE", a, &out);
        self.totals.group_nodes += 1;
        let mut entries = Vec::new();
        for &child in &node.children {
            if node.level > 0 {
                entries.extend(self.group_tree(child));
            } else {
                let lk = self.sb.group_leaf_k();
                let bytes = self.bytes(child, SymbolTableNode::encoded_len(lk, s) as u64);
                let snod = SymbolTableNode::decode(bytes, child, s, lk).unwrap();
                let mut out = Vec::new();
                snod.encode(s, &mut out).unwrap();
                self.same("SNOD", child, &out);
                self.totals.snods += 1;
                // Soft links have no object header (cache type 2); they are not objects.
                for e in &snod.entries {
                    if let Some(oh) = e.object_header {
                        entries.push((e.link_name_offset, oh));
                    }
                }
            }
        }
        entries
    }

    /// Walk a chunk index; its kind and the number of allocated chunks it records.
    fn chunk_index(&mut self, c: &ChunkedLayout, filtered: bool) -> (&'static str, Option<u64>) {
        let s = self.sizes();
        let chunk_bytes = c.chunk_bytes().unwrap();
        let codec = if filtered {
            let w = match c.version {
                LayoutVersion::V5 => s.lengths(),
                _ => chunk_size_len(chunk_bytes),
            };
            RecordCodec::filtered(s, w).unwrap()
        } else {
            RecordCodec::unfiltered(s)
        };
        match c.index {
            ChunkIndex::BTreeV1 => (
                "btree1",
                Some(c.address.map_or(0, |a| self.btree1(a, c.dims.len() as u8))),
            ),
            ChunkIndex::Single(_) => ("single", Some(u64::from(c.address.is_some()))),
            ChunkIndex::Implicit => ("implicit", None),
            ChunkIndex::FixedArray { .. } => (
                "farray",
                Some(c.address.map_or(0, |a| self.farray(a, &codec))),
            ),
            ChunkIndex::ExtensibleArray(p) => (
                "earray",
                Some(c.address.map_or(0, |a| self.earray(a, p.into(), &codec))),
            ),
            ChunkIndex::SkipList(_) => panic!("{}: libhdf5 never writes a skip list", self.name),
            ChunkIndex::BTreeV2(_) => {
                let rank = c.rank();
                (
                    "btree2",
                    Some(c.address.map_or(0, |a| self.btree2(a, &codec, rank))),
                )
            }
        }
    }

    /// Chunks under a v1 B-tree node.
    fn btree1(&mut self, a: Addr, nd: u8) -> u64 {
        let (s, k) = (self.sizes(), self.istore_k);
        let node = ChunkNode::decode(
            self.bytes(a, ChunkNode::encoded_len(s, k, nd) as u64),
            a,
            s,
            k,
            nd,
        )
        .unwrap_or_else(|e| panic!("{}: chunk TREE: {e}", self.name));
        let mut out = Vec::new();
        node.encode(s, k, nd, &mut out).unwrap();
        self.same("chunk TREE", a, &out);
        self.totals.btree1_nodes += 1;
        self.totals.btree1_max_level = self.totals.btree1_max_level.max(node.level);
        if node.level == 0 {
            return node.children.len() as u64;
        }
        node.children
            .clone()
            .into_iter()
            .map(|c| self.btree1(c, nd))
            .sum()
    }

    fn count_set(&self, codec: &RecordCodec, elements: &[u8]) -> u64 {
        elements
            .chunks(codec.element_size())
            .filter(|e| codec.decode(e, Addr(0)).unwrap().addr.is_some())
            .count() as u64
    }

    /// Chunks recorded by a fixed array.
    fn farray(&mut self, a: Addr, codec: &RecordCodec) -> u64 {
        let s = self.sizes();
        let h = farray::Header::decode(self.bytes(a, farray::Header::encoded_len(s) as u64), a, s)
            .unwrap();
        let mut out = Vec::new();
        h.encode(s, &mut out).unwrap();
        self.same("FAHD", a, &out);
        assert_eq!(
            usize::from(h.element_size),
            codec.element_size(),
            "{}: FA element size",
            self.name
        );
        let Some(db) = h.data_block else { return 0 };
        let g = h.geometry().unwrap();
        let block =
            farray::DataBlock::decode(self.bytes(db, g.block_image_len(s)), db, s, &g).unwrap();
        let mut out = Vec::new();
        block.encode(s, &mut out).unwrap();
        self.same("FADB", db, &out);
        if !g.is_paged() {
            return self.count_set(codec, &block.elements);
        }
        let mut n = 0;
        for p in 0..g.npages {
            if !block.page_initialized(p) {
                continue;
            }
            let at = Addr(db.get() + g.page_offset(p, s));
            let bytes = self.bytes(at, g.page_len(p));
            let elems =
                farray::decode_page(bytes, at, g.page_nelmts_of(p), h.element_size, "FADB page")
                    .unwrap();
            n += self.count_set(codec, elems);
            self.totals.farray_pages += 1;
        }
        n
    }

    /// Chunks recorded by an extensible array.
    fn earray(&mut self, a: Addr, params: earray::Params, codec: &RecordCodec) -> u64 {
        let s = self.sizes();
        let h = earray::Header::decode(self.bytes(a, earray::Header::encoded_len(s) as u64), a, s)
            .unwrap();
        let mut out = Vec::new();
        h.encode(s, &mut out).unwrap();
        self.same("EAHD", a, &out);
        assert_eq!(
            h.params, params,
            "{}: EA header and layout parameters",
            self.name
        );
        let es = h.element_size;
        assert_eq!(
            usize::from(es),
            codec.element_size(),
            "{}: EA element size",
            self.name
        );
        let Some(ib_addr) = h.index_block else {
            return 0;
        };
        let g = earray::Geometry::new(h.params).unwrap();
        let ib_len = g.index_block_len(s, es) as u64;
        let ib =
            earray::IndexBlock::decode(self.bytes(ib_addr, ib_len), ib_addr, s, &g, es).unwrap();
        let mut out = Vec::new();
        ib.encode(s, &mut out).unwrap();
        self.same("EAIB", ib_addr, &out);
        *self.totals.earray_blocks.entry("EAIB").or_default() += 1;
        let mut n = self.count_set(codec, &ib.elements);
        // Data blocks reached from the index block: rows below iblk_nsblks, in row order.
        let mut next = 0usize;
        for u in 0..g.iblk_nsblks() {
            let row = *g.row(u).unwrap();
            for _ in 0..row.ndblks {
                if let Some(db) = ib.dblk_addrs[next] {
                    n += self.earray_data_block(db, &g, u, es, codec, None);
                }
                next += 1;
            }
        }
        for (i, sb_addr) in ib.sblk_addrs.iter().enumerate() {
            let Some(sb_addr) = *sb_addr else { continue };
            let u = g.iblk_nsblks() + i;
            let len = g.super_block_len(s, u) as u64;
            let sb =
                earray::SuperBlock::decode(self.bytes(sb_addr, len), sb_addr, s, &g, u).unwrap();
            let mut out = Vec::new();
            sb.encode(s, &g, &mut out).unwrap();
            self.same("EASB", sb_addr, &out);
            *self.totals.earray_blocks.entry("EASB").or_default() += 1;
            assert_eq!(
                sb.block_offset,
                g.row(u).unwrap().start_idx,
                "{}: EASB block offset",
                self.name
            );
            for (d, db) in sb.dblk_addrs.iter().enumerate() {
                if let Some(db) = *db {
                    n += self.earray_data_block(
                        db,
                        &g,
                        u,
                        es,
                        codec,
                        Some((&sb.page_init, d as u64)),
                    );
                }
            }
        }
        assert!(
            n <= h.stats.max_idx_set,
            "{}: more chunks than max_idx_set",
            self.name
        );
        n
    }

    fn earray_data_block(
        &mut self,
        db: Addr,
        g: &earray::Geometry,
        u: usize,
        es: u8,
        codec: &RecordCodec,
        pages: Option<(&Vec<u8>, u64)>,
    ) -> u64 {
        let s = self.sizes();
        let block = earray::DataBlock::decode(
            self.bytes(db, g.data_block_image_len(s, u, es)),
            db,
            s,
            g,
            u,
            es,
        )
        .unwrap_or_else(|e| panic!("{}: EADB row {u}: {e}", self.name));
        let mut out = Vec::new();
        block.encode(s, g, &mut out).unwrap();
        self.same("EADB", db, &out);
        *self.totals.earray_blocks.entry("EADB").or_default() += 1;
        let row = *g.row(u).unwrap();
        if row.npages == 0 {
            return self.count_set(codec, &block.elements);
        }
        let (bitmap, d) = pages.expect("paged data blocks hang off super blocks");
        let mut n = 0;
        for p in 0..row.npages {
            if !earray::bit(bitmap, d * row.npages + p) {
                continue;
            }
            let at = Addr(db.get() + g.page_offset(s, p, es));
            let len = g.page_nelmts() * u64::from(es) + 4;
            let elems =
                earray::decode_page(self.bytes(at, len), at, g.page_nelmts(), es, "EADB page")
                    .unwrap();
            n += self.count_set(codec, elems);
            self.totals.earray_pages += 1;
        }
        n
    }

    /// Records in a v2 B-tree.
    fn btree2(&mut self, a: Addr, codec: &RecordCodec, rank: usize) -> u64 {
        let s = self.sizes();
        let h = btree2::Header::decode(self.bytes(a, btree2::Header::encoded_len(s) as u64), a, s)
            .unwrap();
        let mut out = Vec::new();
        h.encode(s, &mut out).unwrap();
        self.same("BTHD", a, &out);
        assert_eq!(
            usize::from(h.record_size),
            codec.bt2_record_size(rank),
            "{}: BT2 record size",
            self.name
        );
        self.totals.btree2_max_depth = self.totals.btree2_max_depth.max(h.depth);
        let g = btree2::Geometry::new(&h, s).unwrap();
        let Some(root) = h.root else { return 0 };
        let n = self.btree2_node(root, &g, h.depth, u64::from(h.root_nrec), codec, rank);
        assert_eq!(n, h.total_records, "{}: BT2 record count", self.name);
        n
    }

    fn btree2_node(
        &mut self,
        a: Addr,
        g: &btree2::Geometry,
        depth: u16,
        nrec: u64,
        codec: &RecordCodec,
        rank: usize,
    ) -> u64 {
        let s = self.sizes();
        let node = btree2::Node::decode(self.bytes(a, g.node_size() as u64), a, s, g, depth, nrec)
            .unwrap_or_else(|e| panic!("{}: BT2 node: {e}", self.name));
        let mut out = Vec::new();
        node.encode(s, g, depth, &mut out).unwrap();
        self.same("BT2 node", a, &out);
        self.totals.btree2_nodes += 1;
        for i in 0..node.nrec(g) {
            let (r, scaled) = codec
                .decode_bt2(node.record(g, i).unwrap(), a, rank)
                .unwrap();
            assert!(r.addr.is_some() && scaled.len() == rank);
        }
        let mut total = nrec;
        for c in node.children.clone() {
            let sub = self.btree2_node(c.addr, g, depth - 1, c.nrec, codec, rank);
            assert_eq!(sub, c.total, "{}: BT2 subtree count", self.name);
            total += sub;
        }
        total
    }
}

fn manifest(dir: &std::path::Path) -> Value {
    let text = std::fs::read_to_string(dir.join("manifest.json"))
        .unwrap_or_else(|e| panic!("{}: {e}", dir.join("manifest.json").display()));
    serde_json::from_str(&text).unwrap()
}

#[test]
fn libhdf5_files_decode_and_reencode_identically() {
    let dir = fixtures_dir();
    let manifest = manifest(&dir);
    let files = manifest["files"].as_array().unwrap();
    assert!(!files.is_empty());
    let mut totals = Totals::default();
    for entry in files {
        let name = entry["file"].as_str().unwrap();
        let file = std::fs::read(dir.join(name)).unwrap();
        let at = superblock::signature_offsets(file.len() as u64)
            .find(|&o| file[o as usize..].starts_with(&superblock::SIGNATURE))
            .unwrap_or_else(|| panic!("{name}: no signature"));
        let sb_bytes = &file[at as usize..];
        let len =
            Superblock::len_from_prefix(&sb_bytes[..superblock::PREFIX_LEN], Addr(at)).unwrap();
        let sb = Superblock::decode(sb_bytes, Addr(at)).unwrap();
        let mut out = Vec::new();
        sb.encode(&mut out).unwrap();
        assert_eq!(&sb_bytes[..len], &out[..], "{name}: superblock");
        assert_eq!(
            u64::from(sb.version),
            entry["superblock_version"].as_u64().unwrap(),
            "{name}"
        );
        assert_eq!(
            sb.base_address,
            entry["stored_base_address"].as_u64().unwrap(),
            "{name}: stored base"
        );
        // A moved file (bytes put in front of it) keeps its addresses relative to the
        // superblock, as libhdf5 reads it; libhdf5 reports the new base as the userblock size.
        let sb = sb.moved_to(at).unwrap();
        assert_eq!(
            sb.base_address,
            entry["userblock_size"].as_u64().unwrap(),
            "{name}: base"
        );
        // The EOF field is absolute: it includes the userblock.
        assert_eq!(sb.eof_address, file.len() as u64, "{name}: EOF");
        totals.superblocks.insert(sb.version);
        let root = sb.root_object_header().unwrap();
        let mut w = Walker {
            file: &file,
            name,
            sb,
            // From the manifest: a v2/v3 superblock keeps a non-default K in its extension.
            istore_k: entry["istore_k"].as_u64().unwrap() as u16,
            visited: HashMap::new(),
            found: BTreeMap::new(),
            totals: &mut totals,
        };
        w.object(root, "/".into());
        let dense = entry["dense_groups"].as_bool().unwrap_or(false);
        check_against_manifest(name, entry, &w.found, dense);
    }
    println!("{totals:#?}");
    assert_eq!(totals.superblocks, HashSet::from([0, 1, 2, 3]));
    assert_eq!(totals.header_versions, HashSet::from([1, 2]));
    assert!(totals.continuation_chunks > 0);
    assert!(totals.group_nodes > 0 && totals.snods > 0 && totals.heaps > 0);
    assert!(
        totals.btree1_max_level >= 2,
        "a v1 B-tree of depth 3 is covered"
    );
    for kind in [
        "Dataspace",
        "Datatype",
        "Fill Value",
        "Fill Value (old)",
        "Data Layout",
        "Filter Pipeline",
        "Link",
        "Link Info",
        "Group Info",
        "Symbol Table",
        "Object Header Continuation",
        "NIL",
    ] {
        assert!(
            totals.messages.keys().any(|k| k.starts_with(kind)),
            "no {kind} message in any fixture: {:?}",
            totals.messages
        );
    }
    assert!(totals.layout_versions.is_superset(&HashSet::from([3, 4])));
    assert!(totals.farray_pages > 0, "a paged fixed array is covered");
    assert!(
        totals.earray_blocks.contains_key("EASB"),
        "EA super blocks are covered"
    );
    assert!(
        totals.btree2_max_depth >= 1,
        "a v2 B-tree with internal nodes is covered"
    );
}

/// Every object the manifest lists was found where it says, as it says.
fn check_against_manifest(name: &str, entry: &Value, found: &BTreeMap<String, Found>, dense: bool) {
    for o in entry["objects"].as_array().unwrap() {
        let kind = o["kind"].as_str().unwrap();
        if kind != "group" && kind != "dataset" {
            continue;
        }
        let path = o["path"].as_str().unwrap();
        let Some(f) = found.get(path) else {
            // Groups in dense storage (fractal heap) are outside this crate.
            assert!(dense, "{name}: {path} not reached");
            continue;
        };
        let what = format!("{name}: {path}");
        assert_eq!(
            u64::from(f.header_version),
            o["object_header_version"].as_u64().unwrap(),
            "{what}: OH version"
        );
        assert_eq!(
            f.header_chunks as u64,
            o["object_header_chunks"].as_u64().unwrap(),
            "{what}: OH chunks"
        );
        if kind != "dataset" {
            continue;
        }
        assert_eq!(
            f.layout_version.map(u64::from),
            o["layout_version"].as_u64(),
            "{what}: layout version"
        );
        if let Some(dtype) = o["dtype"].as_str() {
            let size: u32 = dtype[2..].parse().unwrap();
            assert_eq!(f.element_size, Some(size), "{what}: element size");
        }
        if let Some(index) = o["index_type"].as_str() {
            assert_eq!(f.index, Some(index), "{what}: index type");
            if let (Some(n), Some(expected)) = (f.chunks_allocated, o["chunks_allocated"].as_u64())
            {
                assert_eq!(n, expected, "{what}: allocated chunks");
            }
        }
    }
}
