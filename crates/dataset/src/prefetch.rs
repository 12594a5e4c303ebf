//! Fetching a whole group tree's structures level by level, for storages where each request
//! is a round trip (an object store): every group of a level has its object header, then its
//! B-tree nodes and local heap, then its symbol table nodes and its members' object headers
//! asked for at once, so listing a tree of N levels costs a few batched request sets a level
//! instead of several requests a group one after another.
//!
//! Only a prefetch: nothing read here is trusted beyond finding what to ask for next; the
//! reads that follow (through the metadata cache) check everything. Anything that does not
//! decode is skipped.

use std::collections::{HashMap, HashSet};

use h5chunk_format::Addr;
use h5chunk_format::btree1::{GroupKey, Node};
use h5chunk_format::local_heap::LocalHeap;
use h5chunk_format::message::{DataLayout, LinkTarget, Message};
use h5chunk_format::object_header::{self, Chunk, MessageFlags, ObjectHeader};
use h5chunk_format::symbol_table_entry::Cache;
use h5chunk_format::symbol_table_node::SymbolTableNode;

use crate::store::Store;

/// Bytes asked for from an object header's address ahead of reading it. More than a header:
/// libhdf5 allocates a dataset's chunk index root (a 2096-byte v1 B-tree node) and a group's
/// B-tree node and local heap right after the object header, so asking for 4 KiB brings them
/// in the same request (in `cargo xtask bench --cloud`'s h5py granule, 512 bytes here left the
/// index root in the next block for one dataset in three: an extra request each, a round
/// later).
pub(crate) const HEADER_PREFETCH: u64 = 4096;
/// Bytes of a chunk index's root asked for ahead (a 1-D v1 B-tree node of K = 32 is 2096
/// bytes; the other indexes' headers are smaller).
const INDEX_PREFETCH: u64 = 2096;
/// The most B-tree levels followed down from a root (a group B-tree of more levels than this
/// holds more links than any file has).
const MAX_DEPTH: usize = 16;
/// The largest local heap data segment asked for ahead.
const MAX_HEAP: u64 = 1 << 20;

/// Read `len` bytes at `addr` from the storage (already prefetched), or `None`.
fn bytes(s: &Store, addr: Addr, len: usize) -> Option<Vec<u8>> {
    let end = addr.get().checked_add(len as u64)?;
    let len = if end > s.storage.len().ok()? {
        usize::try_from(s.storage.len().ok()?.checked_sub(addr.get())?).ok()?
    } else {
        len
    };
    let mut buf = vec![0; len];
    s.storage.read_at(addr, &mut buf).ok()?;
    Some(buf)
}

/// Prefetch the structures of every group under `root` (its object header at `root`), in
/// rounds: each round asks for everything known to be needed (one batched, concurrent
/// request set), then decodes what came to learn what the next round asks for. A structure
/// is asked for as soon as its address is known, whatever the level of the tree it belongs
/// to: a member group's B-tree and local heap with its object header (their addresses are in
/// the symbol table entry that names it), an object header's continuation chunks and its
/// chunk index's root as soon as the chunk naming them came. The rounds are the longest
/// chain of addresses in the tree, not a fixed number a level. Does nothing for a local
/// storage (no remote statistics): reading ahead there only costs reads.
pub(crate) fn group_tree(s: &Store, root: Addr) {
    if s.storage.remote_stats().is_none() {
        return;
    }
    let mut t = Tree::new(s);
    t.want(Want::Header {
        at: root,
        len: HEADER_PREFETCH,
    });
    for _ in 0..MAX_ROUNDS {
        if t.next.is_empty() {
            break;
        }
        let round = std::mem::take(&mut t.next);
        let ranges: Vec<(Addr, u64)> = round.iter().map(|w| t.range(w)).collect();
        let _ = s.storage.prefetch(&ranges);
        for w in round {
            t.process(w);
        }
    }
}

/// Rounds at most (each is one level of some chain of addresses).
const MAX_ROUNDS: usize = 64;
/// Object headers visited at most: past it the reads fetch as they go.
const MAX_HEADERS: usize = 200_000;
/// Continuation chunks followed at most for one header.
const MAX_CONTINUATIONS: usize = 64;
/// The longest object header chunk asked for ahead (longer ones are read as they are used).
const MAX_CHUNK: u64 = 1 << 20;

/// A structure to fetch, then decode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Want {
    /// An object header's first `len` bytes (chunk 0, when it is no longer).
    Header { at: Addr, len: u64 },
    /// A continuation chunk of the object header at `header`.
    Continuation { header: Addr, at: Addr, len: u64 },
    /// A group's v1 B-tree node, `depth` levels below its root.
    GroupNode { at: Addr, depth: usize },
    /// A group's local heap (its header).
    Heap(Addr),
    /// Bytes fetched for a later read, nothing to decode (a heap's data segment, a chunk
    /// index's root).
    Leaf { at: Addr, len: u64 },
    /// A symbol table node.
    SymbolNode(Addr),
}

/// An object header whose continuation chunks are on their way.
struct Partial {
    /// Chunk 0, for the version and flags a continuation chunk decodes with.
    header: ObjectHeader,
    /// Continuation chunks asked for so far.
    followed: usize,
    /// Of those, the ones not decoded yet.
    pending: usize,
}

/// The state of a tree prefetch.
struct Tree<'a> {
    s: &'a Store,
    node_len: u64,
    snod_len: u64,
    heap_len: u64,
    /// What the next round asks for.
    next: Vec<Want>,
    /// Everything asked for so far (nothing twice).
    seen: HashSet<Want>,
    headers: usize,
    /// Headers whose continuation chunks are on their way.
    partial: HashMap<Addr, Partial>,
}

impl<'a> Tree<'a> {
    fn new(s: &'a Store) -> Self {
        Tree {
            s,
            node_len: Node::<GroupKey>::encoded_len(s.sizes, s.k.group_internal, ()) as u64,
            snod_len: SymbolTableNode::encoded_len(s.k.group_leaf, s.sizes) as u64,
            heap_len: LocalHeap::encoded_len(s.sizes) as u64,
            next: Vec::new(),
            seen: HashSet::new(),
            headers: 0,
            partial: HashMap::new(),
        }
    }

    /// Bytes a want asks for.
    fn range(&self, w: &Want) -> (Addr, u64) {
        match *w {
            Want::Header { at, len } | Want::Leaf { at, len } => (at, len),
            Want::Continuation { at, len, .. } => (at, len),
            Want::GroupNode { at, .. } => (at, self.node_len),
            Want::Heap(at) => (at, self.heap_len),
            Want::SymbolNode(at) => (at, self.snod_len),
        }
    }

    /// Ask for `w` next round, unless it was asked for already or a bound is reached;
    /// whether it was asked for.
    fn want(&mut self, w: Want) -> bool {
        // A group's B-tree node is the same structure whatever depth it was reached at.
        let key = match w {
            Want::GroupNode { depth, .. } if depth > MAX_DEPTH => return false,
            Want::GroupNode { at, .. } => Want::GroupNode { at, depth: 0 },
            Want::Header { len, .. } if len == HEADER_PREFETCH && self.headers >= MAX_HEADERS => {
                return false;
            }
            w => w,
        };
        if self.seen.insert(key) {
            if matches!(w, Want::Header { len, .. } if len == HEADER_PREFETCH) {
                self.headers = self.headers.saturating_add(1);
            }
            self.next.push(w);
            return true;
        }
        false
    }

    fn process(&mut self, w: Want) {
        let s = self.s;
        let sizes = s.sizes;
        match w {
            Want::Header { at, len } => {
                let Some(b) = bytes(s, at, len as usize) else {
                    return;
                };
                let Ok(need) = object_header::chunk0_len(&b, at) else {
                    return;
                };
                if need > b.len() as u64 {
                    // Chunk 0 is longer than asked for: ask for all of it next round.
                    if need <= MAX_CHUNK && len == HEADER_PREFETCH {
                        self.want(Want::Header { at, len: need });
                    }
                    return;
                }
                let Ok(h) = ObjectHeader::decode_chunk0(&b, at, sizes) else {
                    return;
                };
                let Some(chunk) = h.chunk(0).cloned() else {
                    return;
                };
                self.partial.insert(
                    at,
                    Partial {
                        header: h,
                        followed: 0,
                        pending: 0,
                    },
                );
                self.chunk(at, &chunk);
                self.settle(at);
            }
            Want::Continuation { header, at, len } => {
                if let Some(p) = self.partial.get_mut(&header) {
                    p.pending = p.pending.saturating_sub(1);
                }
                let chunk = bytes(s, at, len as usize).and_then(|b| {
                    self.partial
                        .get(&header)
                        .and_then(|p| p.header.decode_continuation(&b, at).ok())
                });
                if let Some(chunk) = chunk {
                    self.chunk(header, &chunk);
                }
                self.settle(header);
            }
            Want::GroupNode { at, depth } => {
                let Some(b) = bytes(s, at, self.node_len as usize) else {
                    return;
                };
                let Ok(node) = Node::<GroupKey>::decode(&b, at, sizes, s.k.group_internal, ())
                else {
                    return;
                };
                for c in node.children.iter().copied() {
                    if node.level == 0 {
                        self.want(Want::SymbolNode(c));
                    } else {
                        self.want(Want::GroupNode {
                            at: c,
                            depth: depth.saturating_add(1),
                        });
                    }
                }
            }
            Want::Heap(at) => {
                if let Some(b) = bytes(s, at, self.heap_len as usize)
                    && let Ok(lh) = LocalHeap::decode(&b, at, sizes)
                {
                    self.want(Want::Leaf {
                        at: lh.data_segment_address,
                        len: lh.data_segment_size.min(MAX_HEAP),
                    });
                }
            }
            Want::SymbolNode(at) => {
                let Some(b) = bytes(s, at, self.snod_len as usize) else {
                    return;
                };
                let Ok(node) = SymbolTableNode::decode(&b, at, sizes, s.k.group_leaf) else {
                    return;
                };
                for e in &node.entries {
                    let Some(h) = e.object_header else {
                        continue;
                    };
                    self.want(Want::Header {
                        at: h,
                        len: HEADER_PREFETCH,
                    });
                    // A member group's symbol table, as the entry caches it: asked for with
                    // its header rather than a round after it.
                    if let Cache::SymbolTable {
                        btree: Some(btree),
                        heap: Some(heap),
                    } = e.cache()
                    {
                        self.want(Want::GroupNode {
                            at: btree,
                            depth: 0,
                        });
                        self.want(Want::Heap(heap));
                    }
                }
            }
            Want::Leaf { .. } => {}
        }
    }

    /// What a chunk of the object header at `header` names: its continuation chunks, a
    /// group's links or symbol table, a dataset's chunk index root.
    fn chunk(&mut self, header: Addr, chunk: &Chunk) {
        let sizes = self.s.sizes;
        let Some(mut followed) = self.partial.get(&header).map(|p| p.followed) else {
            return;
        };
        let mut asked = 0usize;
        for m in &chunk.messages {
            if let Ok(Some(c)) = m.continuation(chunk.addr, sizes) {
                if followed < MAX_CONTINUATIONS && c.length <= MAX_CHUNK {
                    followed = followed.saturating_add(1);
                    if self.want(Want::Continuation {
                        header,
                        at: c.offset,
                        len: c.length,
                    }) {
                        asked = asked.saturating_add(1);
                    }
                }
                continue;
            }
            if m.flags.contains(MessageFlags::SHARED) {
                continue;
            }
            match Message::decode(m.kind, &m.data, header, sizes) {
                Ok(Message::SymbolTable(st)) => {
                    self.want(Want::GroupNode {
                        at: st.btree_address,
                        depth: 0,
                    });
                    self.want(Want::Heap(st.local_heap_address));
                }
                Ok(Message::Link(l)) => {
                    if let LinkTarget::Hard(a) = l.target {
                        self.want(Want::Header {
                            at: a,
                            len: HEADER_PREFETCH,
                        });
                    }
                }
                // Opening a chunked dataset reads its chunk index's root.
                Ok(Message::DataLayout(DataLayout::Chunked(l))) => {
                    if let Some(a) = l.address {
                        self.want(Want::Leaf {
                            at: a,
                            len: INDEX_PREFETCH,
                        });
                    }
                }
                // Dense link storage is read as it is listed.
                _ => {}
            }
        }
        if let Some(p) = self.partial.get_mut(&header) {
            p.followed = followed;
            p.pending = p.pending.saturating_add(asked);
        }
    }

    /// Forget the header at `header` once no continuation chunk of it is on its way.
    fn settle(&mut self, header: Addr) {
        if self.partial.get(&header).is_some_and(|p| p.pending == 0) {
            self.partial.remove(&header);
        }
    }
}
