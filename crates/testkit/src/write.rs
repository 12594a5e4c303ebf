//! A minimal HDF5 file writer: a structure crate builds its index in the writer's metadata
//! cache, writes its chunks, describes the dataset, and `finish` writes the dataset headers, the
//! root group and the superblock so that libhdf5 (h5py, h5dump) opens the file.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use h5chunk_cache::{CacheConfig, FileStorage, MetadataCache, Storage};
use h5chunk_format::btree1::{GroupKey, GroupNode};
use h5chunk_format::local_heap::{LocalHeap, LocalHeapData};
use h5chunk_format::message::{
    ChunkedLayout, DataLayout, Dataspace, DataspaceKind, DataspaceVersion, Datatype, Extent,
    FillValue, FillValueVersion, FilterPipeline, GroupInfo, Link, LinkInfo, Message, SymbolTable,
};
use h5chunk_format::object_header::{MessageFlags, ObjectHeader, RawMessage, v2};
use h5chunk_format::superblock::Superblock;
use h5chunk_format::symbol_table_entry::{Cache, SymbolTableEntry};
use h5chunk_format::symbol_table_node::SymbolTableNode;
use h5chunk_format::{Addr, Sizes};

/// Which file format the writer produces, as libhdf5 does for the library version bounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// h5py's default (`libver='earliest'`): superblock 0, version 1 object headers, an
    /// old-style root group (symbol table: local heap, group B-tree, symbol table nodes).
    Earliest,
    /// `libver='latest'`: superblock 3, version 2 object headers, compact links.
    Latest,
}

/// One dataset to describe in the file.
#[derive(Clone, Debug)]
pub struct DatasetSpec {
    /// The element type.
    pub datatype: Datatype,
    /// Current dimensions.
    pub dims: Vec<u64>,
    /// Maximum dimensions; `None` is unlimited.
    pub max_dims: Vec<Option<u64>>,
    /// The layout, with the index address filled in.
    pub layout: DataLayout,
    /// The filter pipeline, if any (its version should suit the format: 1 for `Earliest`).
    pub pipeline: Option<FilterPipeline>,
}

impl DatasetSpec {
    /// A chunked dataset. `chunk` must equal the layout's chunk dimensions.
    pub fn chunked(
        datatype: Datatype,
        dims: &[u64],
        max_dims: &[Option<u64>],
        chunk: &[u64],
        layout: ChunkedLayout,
        pipeline: Option<FilterPipeline>,
    ) -> DatasetSpec {
        assert_eq!(layout.chunk_dims(), chunk, "chunk dims and layout disagree");
        assert_eq!(dims.len(), chunk.len(), "rank of dims and chunk");
        assert_eq!(dims.len(), max_dims.len(), "rank of dims and max dims");
        DatasetSpec {
            datatype,
            dims: dims.to_vec(),
            max_dims: max_dims.to_vec(),
            layout: DataLayout::Chunked(layout),
            pipeline,
        }
    }
}

#[derive(Debug)]
enum Member {
    Dataset(Box<DatasetSpec>),
    Group { btree: Addr, heap: Addr },
}

/// Writes a new HDF5 file holding datasets whose storage the caller builds.
#[derive(Debug)]
pub struct FileWriter {
    path: PathBuf,
    format: Format,
    storage: Arc<dyn Storage>,
    cache: MetadataCache,
    members: Vec<(String, Member)>,
}

fn superblock_len(format: Format) -> u64 {
    match format {
        Format::Earliest => 96,
        Format::Latest => 48,
    }
}

fn raw(m: &Message, flags: u8, sizes: Sizes) -> RawMessage {
    let mut data = Vec::new();
    m.encode(sizes, &mut data)
        .unwrap_or_else(|e| panic!("encode {:?}: {e}", m.kind()));
    RawMessage::new(m.kind(), MessageFlags::from_bits_retain(flags), data)
}

impl FileWriter {
    /// Create (truncate) `path`, with a metadata cache that records its write trace.
    pub fn create(path: impl AsRef<Path>, format: Format) -> FileWriter {
        let config = CacheConfig {
            record_trace: true,
            ..CacheConfig::default()
        };
        FileWriter::create_with_config(path, format, config)
    }

    /// Create (truncate) `path` with the given cache configuration.
    pub fn create_with_config(
        path: impl AsRef<Path>,
        format: Format,
        config: CacheConfig,
    ) -> FileWriter {
        let path = path.as_ref().to_path_buf();
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        }
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let storage: Arc<dyn Storage> = Arc::new(FileStorage::new(file));
        let cache = MetadataCache::new(Arc::clone(&storage), config)
            .unwrap_or_else(|e| panic!("metadata cache: {e}"));
        // The superblock sits at address 0; everything else is allocated after it.
        cache.allocator().set_eoa(Addr(superblock_len(format)));
        FileWriter {
            path,
            format,
            storage,
            cache,
            members: Vec::new(),
        }
    }

    /// The file's size of offsets and lengths (8 and 8).
    pub fn sizes(&self) -> Sizes {
        Sizes::DEFAULT
    }

    /// The format being written.
    pub fn format(&self) -> Format {
        self.format
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The metadata cache over the new file; allocate through `cache().allocator()`.
    pub fn cache(&self) -> &MetadataCache {
        &self.cache
    }

    /// The file's storage.
    pub fn storage(&self) -> Arc<dyn Storage> {
        Arc::clone(&self.storage)
    }

    /// Allocate space for `bytes` and write them there (a raw-data chunk); its address.
    pub fn write_chunk(&self, bytes: &[u8]) -> Addr {
        let at = self
            .cache
            .allocator()
            .allocate(bytes.len() as u64)
            .unwrap_or_else(|e| panic!("allocate {} bytes: {e}", bytes.len()));
        self.storage
            .write_at(at, bytes)
            .unwrap_or_else(|e| panic!("write chunk @ {at}: {e}"));
        at
    }

    /// Link a dataset named `name` into the root group.
    pub fn add_dataset(&mut self, name: &str, spec: DatasetSpec) {
        self.members
            .push((name.to_owned(), Member::Dataset(Box::new(spec))));
    }

    /// Link an old-style group named `name`, whose group B-tree and local heap the caller built
    /// in this file, into the root group.
    pub fn add_group_symbol_table(&mut self, name: &str, btree: Addr, heap: Addr) {
        self.members
            .push((name.to_owned(), Member::Group { btree, heap }));
    }

    /// Allocate space for a new single-chunk object header built by `build` (given its
    /// address) and write it; its address.
    fn write_header(&self, build: impl Fn(Addr) -> ObjectHeader) -> Addr {
        let len: usize = build(Addr(0))
            .encode_chunks()
            .unwrap_or_else(|e| panic!("object header: {e}"))
            .iter()
            .map(|(_, b)| b.len())
            .sum();
        let at = self
            .cache
            .allocator()
            .allocate(len as u64)
            .unwrap_or_else(|e| panic!("allocate object header: {e}"));
        for (a, bytes) in build(at).encode_chunks().unwrap_or_else(|e| panic!("{e}")) {
            self.write(a, &bytes);
        }
        at
    }

    fn write(&self, at: Addr, bytes: &[u8]) {
        self.storage
            .write_at(at, bytes)
            .unwrap_or_else(|e| panic!("write {} bytes @ {at}: {e}", bytes.len()));
    }

    fn allocate_and_write(&self, bytes: &[u8]) -> Addr {
        self.write_chunk(bytes)
    }

    fn dataset_header(&self, spec: &DatasetSpec) -> Addr {
        let s = self.sizes();
        let (space_v, fill_v) = match self.format {
            Format::Earliest => (DataspaceVersion::V1, FillValueVersion::V2),
            Format::Latest => (DataspaceVersion::V2, FillValueVersion::V3),
        };
        let max: Vec<Extent> = spec
            .max_dims
            .iter()
            .map(|m| m.map_or(Extent::Unlimited, Extent::Fixed))
            .collect();
        // libhdf5 stores the maximum dimensions whenever they differ from the current ones.
        let differs = max
            .iter()
            .zip(&spec.dims)
            .any(|(m, &d)| *m != Extent::Fixed(d));
        let dataspace = Dataspace {
            version: space_v,
            kind: DataspaceKind::Simple,
            dims: spec.dims.clone(),
            max_dims: differs.then_some(max),
        };
        let mut messages = vec![
            raw(&Message::Dataspace(dataspace), 0x00, s),
            raw(&Message::Datatype(spec.datatype.clone()), 0x01, s),
            raw(
                &Message::FillValue(FillValue::h5py_default(fill_v)),
                0x01,
                s,
            ),
        ];
        if let Some(p) = &spec.pipeline {
            messages.push(raw(&Message::FilterPipeline(p.clone()), 0x01, s));
        }
        messages.push(raw(&Message::DataLayout(spec.layout.clone()), 0x00, s));
        self.write_header(|at| {
            match self.format {
                Format::Earliest => ObjectHeader::new_v1(at, s, 1, messages.clone(), Some(256)),
                Format::Latest => {
                    ObjectHeader::new_v2(at, s, v2::Prefix::default(), messages.clone(), Some(256))
                }
            }
            .unwrap_or_else(|e| panic!("dataset header: {e}"))
        })
    }

    fn group_header(&self, btree: Addr, heap: Addr) -> Addr {
        let s = self.sizes();
        let st = Message::SymbolTable(SymbolTable {
            btree_address: btree,
            local_heap_address: heap,
        });
        let messages = vec![raw(&st, 0x00, s)];
        self.write_header(|at| {
            match self.format {
                Format::Earliest => ObjectHeader::new_v1(at, s, 1, messages.clone(), None),
                Format::Latest => {
                    ObjectHeader::new_v2(at, s, v2::Prefix::default(), messages.clone(), None)
                }
            }
            .unwrap_or_else(|e| panic!("group header: {e}"))
        })
    }

    /// An old-style group holding `members` (name, object header, cache): local heap, one group
    /// B-tree leaf and its symbol table nodes. Returns (B-tree, heap) addresses.
    fn symbol_table(&self, members: &[(String, Addr, Cache)]) -> (Addr, Addr) {
        let s = self.sizes();
        const LEAF_K: u16 = 4;
        const INTERNAL_K: u16 = 16;
        let per_snod = usize::from(2 * LEAF_K);
        assert!(
            members.len() <= per_snod * usize::from(2 * INTERNAL_K),
            "the testkit writes one group B-tree leaf: at most 256 members"
        );
        let mut names = LocalHeapData::new(88, Addr(0), s);
        let empty = names.insert_name(b"").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(empty, 0);
        let mut sorted: Vec<_> = members.to_vec();
        sorted.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        let offsets: Vec<u64> = sorted
            .iter()
            .map(|(n, _, _)| {
                names
                    .insert_name(n.as_bytes())
                    .unwrap_or_else(|e| panic!("{e}"))
            })
            .collect();
        // Local heap: header, then its data segment.
        let data = names.bytes().to_vec();
        let heap_at = self
            .cache
            .allocator()
            .allocate(LocalHeap::encoded_len(s) as u64)
            .unwrap_or_else(|e| panic!("{e}"));
        let data_at = self.allocate_and_write(&data);
        let heap = LocalHeap {
            data_segment_size: data.len() as u64,
            free_list_head: names.free_list_head(),
            data_segment_address: data_at,
        };
        let mut out = Vec::new();
        heap.encode(s, &mut out).unwrap_or_else(|e| panic!("{e}"));
        self.write(heap_at, &out);
        // Symbol table nodes of up to 2 × leaf K entries, then the B-tree leaf over them.
        let mut tree = GroupNode::new_leaf();
        tree.keys.push(GroupKey(0));
        for (group, offs) in sorted.chunks(per_snod).zip(offsets.chunks(per_snod)) {
            let mut snod = SymbolTableNode::new(LEAF_K);
            for ((_, oh, cache), &off) in group.iter().zip(offs) {
                let entry = SymbolTableEntry::new(off, Some(*oh), *cache, s)
                    .unwrap_or_else(|e| panic!("{e}"));
                snod.entries.push(entry);
            }
            let mut out = Vec::new();
            snod.encode(s, &mut out).unwrap_or_else(|e| panic!("{e}"));
            let at = self.allocate_and_write(&out);
            tree.children.push(at);
            tree.keys.push(GroupKey(*offs.last().unwrap_or(&0)));
        }
        let mut out = Vec::new();
        tree.encode(s, INTERNAL_K, (), &mut out)
            .unwrap_or_else(|e| panic!("{e}"));
        let tree_at = self.allocate_and_write(&out);
        (tree_at, heap_at)
    }

    /// Flush the cache, write every member's object header, the root group and the superblock
    /// (EOF = end of allocated space), and trim the file to it. The file's path.
    pub fn finish(self) -> PathBuf {
        let report = self
            .cache
            .flush()
            .unwrap_or_else(|e| panic!("flush the metadata cache: {e}"));
        assert!(
            report.is_complete(),
            "the metadata cache could not write everything (blocked: {:?}, dirty chunk proxies: {:?}); \
             write the chunks and mark them written first",
            report.blocked,
            report.dirty_proxies
        );
        let s = self.sizes();
        let mut members = Vec::new();
        for (name, m) in &self.members {
            let (oh, cache) = match m {
                Member::Dataset(spec) => (self.dataset_header(spec), Cache::Nothing),
                Member::Group { btree, heap } => (
                    self.group_header(*btree, *heap),
                    Cache::SymbolTable {
                        btree: Some(*btree),
                        heap: Some(*heap),
                    },
                ),
            };
            members.push((name.clone(), oh, cache));
        }
        let sb = match self.format {
            Format::Earliest => {
                let (btree, heap) = self.symbol_table(&members);
                let root = self.group_header(btree, heap);
                let entry = SymbolTableEntry::new(
                    0,
                    Some(root),
                    Cache::SymbolTable {
                        btree: Some(btree),
                        heap: Some(heap),
                    },
                    s,
                )
                .unwrap_or_else(|e| panic!("{e}"));
                Superblock::new_v0(s, 0, entry)
            }
            Format::Latest => {
                let mut messages = vec![
                    raw(
                        &Message::LinkInfo(LinkInfo {
                            max_creation_index: None,
                            fractal_heap_address: None,
                            name_index_address: None,
                            creation_order_indexed: false,
                            creation_order_index_address: None,
                        }),
                        0x00,
                        s,
                    ),
                    raw(
                        &Message::GroupInfo(GroupInfo {
                            link_phase_change: None,
                            estimates: None,
                        }),
                        0x01,
                        s,
                    ),
                ];
                for (name, oh, _) in &members {
                    messages.push(raw(
                        &Message::Link(Link::hard(name.as_bytes(), *oh)),
                        0x00,
                        s,
                    ));
                }
                let root = self.write_header(|at| {
                    ObjectHeader::new_v2(at, s, v2::Prefix::default(), messages.clone(), Some(120))
                        .unwrap_or_else(|e| panic!("root group header: {e}"))
                });
                Superblock::new_v3(s, 0, root)
            }
        };
        let eof = self.cache.allocator().eoa().get();
        let mut sb = sb;
        sb.eof_address = eof;
        let mut out = Vec::new();
        sb.encode(&mut out)
            .unwrap_or_else(|e| panic!("superblock: {e}"));
        assert_eq!(out.len() as u64, superblock_len(self.format));
        self.write(Addr(0), &out);
        self.storage
            .set_len(eof)
            .unwrap_or_else(|e| panic!("set file length: {e}"));
        self.storage.sync().unwrap_or_else(|e| panic!("sync: {e}"));
        self.path
    }
}
