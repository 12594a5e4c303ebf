//! Find a dataset's messages in any HDF5 file: the superblock, the groups on its path
//! (old-style symbol tables and new-style compact links) and its object header.

use std::path::Path;
use std::sync::Arc;

use h5chunk_cache::{CacheConfig, FileStorage, MetadataCache, Storage};
use h5chunk_format::btree1::GroupNode;
use h5chunk_format::chunk_record::{RecordCodec, chunk_size_len};
use h5chunk_format::local_heap::{LocalHeap, LocalHeapData};
use h5chunk_format::message::{
    ChunkedLayout, DataLayout, Dataspace, Datatype, Extent, FillValue, FilterPipeline,
    LayoutVersion, LinkTarget, Message,
};
use h5chunk_format::object_header::ObjectHeader;
use h5chunk_format::superblock::{self, Superblock};
use h5chunk_format::symbol_table_node::SymbolTableNode;
use h5chunk_format::{Addr, Error, Sizes};

/// An HDF5 file opened for inspection.
#[derive(Debug)]
pub struct H5File {
    storage: Arc<dyn Storage>,
    sb: Superblock,
    len: u64,
}

/// The messages of one dataset.
#[derive(Clone, Debug)]
pub struct DatasetInfo {
    /// Address of the dataset's object header.
    pub header: Addr,
    /// Its dataspace.
    pub dataspace: Dataspace,
    /// Its datatype.
    pub datatype: Datatype,
    /// Its layout.
    pub layout: DataLayout,
    /// Its filter pipeline, if any.
    pub pipeline: Option<FilterPipeline>,
    /// Its fill value message, if any.
    pub fill: Option<FillValue>,
}

impl DatasetInfo {
    /// The chunked layout (panics if the dataset is not chunked).
    pub fn chunked(&self) -> &ChunkedLayout {
        self.layout
            .as_chunked()
            .unwrap_or_else(|| panic!("dataset @ {} is not chunked", self.header))
    }

    /// Whether the dataset has a non-empty filter pipeline.
    pub fn is_filtered(&self) -> bool {
        self.pipeline
            .as_ref()
            .is_some_and(|p| !p.filters.is_empty())
    }

    /// How the chunk index stores this dataset's records: unfiltered, or filtered with the size
    /// width of its layout version (`chunk_size_len` for version 4, the size of lengths for 5).
    pub fn record_codec(&self, sizes: Sizes) -> RecordCodec {
        let c = self.chunked();
        if !self.is_filtered() {
            return RecordCodec::unfiltered(sizes);
        }
        let width = match c.version {
            LayoutVersion::V5 => sizes.lengths(),
            _ => chunk_size_len(c.chunk_bytes().unwrap_or(u64::MAX)),
        };
        RecordCodec::filtered(sizes, width).unwrap_or_else(|e| panic!("record codec: {e}"))
    }

    /// The current dimensions.
    pub fn dims(&self) -> Vec<u64> {
        self.dataspace.dims.clone()
    }

    /// The maximum dimensions; `None` is unlimited.
    pub fn max_dims(&self) -> Vec<Option<u64>> {
        match &self.dataspace.max_dims {
            Some(m) => m
                .iter()
                .map(|e| match e {
                    Extent::Fixed(n) => Some(*n),
                    Extent::Unlimited => None,
                })
                .collect(),
            None => self.dataspace.dims.iter().map(|&d| Some(d)).collect(),
        }
    }

    /// The chunk dimensions (without the element-size slot).
    pub fn chunk_dims(&self) -> Vec<u64> {
        self.chunked().chunk_dims().to_vec()
    }
}

impl H5File {
    /// Open `path` read-only and decode its superblock.
    pub fn open(path: impl AsRef<Path>) -> H5File {
        let path = path.as_ref();
        let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let len = file.metadata().map(|m| m.len()).unwrap_or(0);
        let storage: Arc<dyn Storage> = Arc::new(FileStorage::new(file));
        let read = |at: u64, n: u64| -> Vec<u8> {
            let n = n.min(len.saturating_sub(at));
            let mut buf = vec![0u8; n as usize];
            storage
                .read_at(Addr(at), &mut buf)
                .unwrap_or_else(|e| panic!("{}: read {n} bytes @ {at:#x}: {e}", path.display()));
            buf
        };
        let at = superblock::signature_offsets(len)
            .find(|&o| read(o, 8) == superblock::SIGNATURE)
            .unwrap_or_else(|| panic!("{}: no HDF5 signature", path.display()));
        let prefix = read(at, superblock::PREFIX_LEN as u64);
        let sb_len = Superblock::len_from_prefix(&prefix, Addr(at))
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let sb = Superblock::decode(&read(at, sb_len as u64), Addr(at))
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(
            sb.base_address,
            0,
            "{}: files with a userblock are not supported by the testkit reader",
            path.display()
        );
        H5File { storage, sb, len }
    }

    /// The superblock's size of offsets and lengths.
    pub fn sizes(&self) -> Sizes {
        self.sb.sizes
    }

    /// The superblock.
    pub fn superblock(&self) -> &Superblock {
        &self.sb
    }

    /// The file's storage.
    pub fn storage(&self) -> Arc<dyn Storage> {
        Arc::clone(&self.storage)
    }

    /// A new metadata cache over the file, its allocator's EOA set from the superblock.
    pub fn cache(&self, config: CacheConfig) -> MetadataCache {
        let cache = MetadataCache::new(self.storage(), config)
            .unwrap_or_else(|e| panic!("metadata cache: {e}"));
        cache.allocator().set_eoa(Addr(
            self.sb.eof_address.saturating_sub(self.sb.base_address),
        ));
        cache
    }

    /// `len` bytes at `at` (clamped to the end of the file).
    pub fn read(&self, at: Addr, len: u64) -> Vec<u8> {
        let n = len.min(self.len.saturating_sub(at.get()));
        let mut buf = vec![0u8; n as usize];
        self.storage
            .read_at(at, &mut buf)
            .unwrap_or_else(|e| panic!("read {n} bytes @ {at}: {e}"));
        buf
    }

    fn header(&self, at: Addr) -> ObjectHeader {
        ObjectHeader::read(at, self.sizes(), |a, n| -> Result<Vec<u8>, Error> {
            Ok(self.read(a, n))
        })
        .unwrap_or_else(|e| panic!("object header @ {at}: {e}"))
    }

    /// The whole file's bytes with the first message of type `kind` in the object header at
    /// `at` changed in place by `change` (its length kept), every chunk of the header
    /// re-encoded: a version 2 header's checksums are recomputed, so the mutated file is
    /// consistent and only the message's own rules can refuse it. This is how the hostile-input
    /// tests make impossible files from real ones (panics if there is no such message).
    pub fn with_message_changed(
        &self,
        at: Addr,
        kind: h5chunk_format::message::MessageType,
        change: impl FnOnce(&mut [u8]),
    ) -> Vec<u8> {
        let mut header = self.header(at);
        let message = header
            .messages_mut()
            .find(|m| m.kind == kind)
            .unwrap_or_else(|| panic!("object header @ {at}: no message of type {kind:?}"));
        change(&mut message.data);
        let mut bytes = self.read(Addr(0), self.len);
        for (addr, image) in header
            .encode_chunks()
            .unwrap_or_else(|e| panic!("object header @ {at}: {e}"))
        {
            let start = addr.get() as usize;
            bytes[start..start + image.len()].copy_from_slice(&image);
        }
        bytes
    }

    /// The raw messages of the object header at `at`: type and body bytes, as stored.
    pub fn raw_messages(&self, at: Addr) -> Vec<(h5chunk_format::message::MessageType, Vec<u8>)> {
        self.header(at)
            .messages()
            .map(|m| (m.kind, m.data.to_vec()))
            .collect()
    }

    /// The typed messages of the header at `at`; a shared one (a committed datatype's
    /// reference) is the first message of its type in the header it names.
    fn messages(&self, at: Addr) -> Vec<Message> {
        use h5chunk_format::message::SharedMessage;
        use h5chunk_format::object_header::MessageFlags;
        let mut out = Vec::new();
        for m in self.header(at).messages() {
            if m.flags.contains(MessageFlags::SHARED) {
                let mut d =
                    h5chunk_format::cursor::Decoder::new(&m.data, at, self.sizes(), "shared");
                let target = match SharedMessage::decode(&mut d) {
                    Ok(SharedMessage::Committed(a)) if a != at => a,
                    other => panic!("object header @ {at}: shared message {other:?}"),
                };
                out.extend(
                    self.messages(target)
                        .into_iter()
                        .find(|t| t.kind() == m.kind),
                );
                continue;
            }
            match Message::decode(m.kind, &m.data, at, self.sizes()) {
                Ok(m) => out.push(m),
                // Attributes (of committed types, ...) are not this reader's business.
                Err(_) if m.kind == h5chunk_format::message::MessageType::ATTRIBUTE => {}
                Err(e) => panic!("object header @ {at}: {e}"),
            }
        }
        out
    }

    /// The object header address of `name` in the group whose header is at `group`.
    fn child(&self, group: Addr, name: &str) -> Option<Addr> {
        for m in self.messages(group) {
            match m {
                Message::Link(l) if l.name == name.as_bytes() => match l.target {
                    LinkTarget::Hard(a) => return Some(a),
                    other => panic!("{name}: not a hard link: {other:?}"),
                },
                Message::SymbolTable(st) => {
                    let s = self.sizes();
                    let heap_bytes =
                        self.read(st.local_heap_address, LocalHeap::encoded_len(s) as u64);
                    let heap = LocalHeap::decode(&heap_bytes, st.local_heap_address, s)
                        .unwrap_or_else(|e| panic!("{e}"));
                    let data = self.read(heap.data_segment_address, heap.data_segment_size);
                    let names = LocalHeapData::decode(
                        &data,
                        heap.data_segment_address,
                        s,
                        heap.free_list_head,
                    )
                    .unwrap_or_else(|e| panic!("{e}"));
                    if let Some(a) = self.find_in_group_tree(st.btree_address, name, &names, 0) {
                        return Some(a);
                    }
                }
                _ => {}
            }
        }
        None
    }

    fn find_in_group_tree(
        &self,
        node: Addr,
        name: &str,
        names: &LocalHeapData,
        depth: u8,
    ) -> Option<Addr> {
        assert!(
            depth <= h5chunk_format::btree1::MAX_DEPTH,
            "group B-tree too deep"
        );
        let (s, k) = (self.sizes(), self.sb.group_internal_k());
        let bytes = self.read(node, GroupNode::encoded_len(s, k, ()) as u64);
        let tree = GroupNode::decode(&bytes, node, s, k, ()).unwrap_or_else(|e| panic!("{e}"));
        for &child in &tree.children {
            let found = if tree.level > 0 {
                self.find_in_group_tree(child, name, names, depth + 1)
            } else {
                let lk = self.sb.group_leaf_k();
                let bytes = self.read(child, SymbolTableNode::encoded_len(lk, s) as u64);
                let snod =
                    SymbolTableNode::decode(&bytes, child, s, lk).unwrap_or_else(|e| panic!("{e}"));
                snod.entries.iter().find_map(|e| {
                    (names.name(e.link_name_offset).ok()? == name.as_bytes())
                        .then_some(e.object_header)
                        .flatten()
                })
            };
            if found.is_some() {
                return found;
            }
        }
        None
    }

    /// The object header address at `path` (absolute, `/`-separated).
    pub fn object(&self, path: &str) -> Addr {
        let mut at = self
            .sb
            .root_object_header()
            .unwrap_or_else(|| panic!("no root group"));
        for name in path.split('/').filter(|n| !n.is_empty()) {
            at = self
                .child(at, name)
                .unwrap_or_else(|| panic!("{path}: no member {name:?}"));
        }
        at
    }

    /// The messages of the dataset at `path`.
    pub fn dataset(&self, path: &str) -> DatasetInfo {
        let header = self.object(path);
        let (mut dataspace, mut datatype, mut layout, mut pipeline, mut fill) =
            (None, None, None, None, None);
        for m in self.messages(header) {
            match m {
                Message::Dataspace(d) => dataspace = Some(d),
                Message::Datatype(t) => datatype = Some(t),
                Message::DataLayout(l) => layout = Some(l),
                Message::FilterPipeline(p) => pipeline = Some(p),
                Message::FillValue(f) => fill = Some(f),
                _ => {}
            }
        }
        DatasetInfo {
            header,
            dataspace: dataspace.unwrap_or_else(|| panic!("{path}: no dataspace")),
            datatype: datatype.unwrap_or_else(|| panic!("{path}: no (numeric) datatype")),
            layout: layout.unwrap_or_else(|| panic!("{path}: no layout")),
            pipeline,
            fill,
        }
    }
}
