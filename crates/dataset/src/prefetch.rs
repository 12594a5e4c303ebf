//! Fetching a whole group tree's structures level by level, for storages where each request
//! is a round trip (an object store): every group of a level has its object header, then its
//! B-tree nodes and local heap, then its symbol table nodes and its members' object headers
//! asked for at once, so listing a tree of N levels costs a few batched request sets a level
//! instead of several requests a group one after another.
//!
//! Only a prefetch: nothing read here is trusted beyond finding what to ask for next; the
//! reads that follow (through the metadata cache) check everything. Anything that does not
//! decode is skipped.

use std::collections::HashSet;

use h5chunk_format::Addr;
use h5chunk_format::btree1::{GroupKey, Node};
use h5chunk_format::local_heap::LocalHeap;
use h5chunk_format::message::{DataLayout, Message};
use h5chunk_format::symbol_table_node::SymbolTableNode;

use crate::link::{self, LinkStorage};
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
/// The most groups a tree prefetch visits: past it the reads fetch as they go.
const MAX_GROUPS: usize = 100_000;
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

/// Prefetch the structures of every group under `root` (its object header at `root`), level
/// by level. Does nothing for a local storage (no remote statistics): reading ahead there
/// only costs reads.
pub(crate) fn group_tree(s: &Store, root: Addr) {
    if s.storage.remote_stats().is_none() {
        return;
    }
    let mut seen: HashSet<Addr> = HashSet::from([root]);
    let mut level = vec![root];
    while !level.is_empty() && seen.len() < MAX_GROUPS {
        let members = group_level(s, &level);
        // The members that are groups form the next level (their headers are cached now).
        level = members
            .into_iter()
            .filter(|a| seen.len() < MAX_GROUPS && seen.insert(*a))
            .filter(|a| link::storage_of(s, *a).is_ok())
            .collect();
    }
}

/// Prefetch the link structures of the groups whose headers are at `groups`, and their
/// members' object headers; the members' header addresses are returned.
fn group_level(s: &Store, groups: &[Addr]) -> Vec<Addr> {
    let heads: Vec<(Addr, u64)> = groups.iter().map(|a| (*a, HEADER_PREFETCH)).collect();
    let _ = s.storage.prefetch(&heads);
    let sizes = s.sizes;
    let node_len = Node::<GroupKey>::encoded_len(sizes, s.k.group_internal, ());
    let snod_len = SymbolTableNode::encoded_len(s.k.group_leaf, sizes);
    let heap_len = LocalHeap::encoded_len(sizes);
    let mut members = Vec::new();
    let mut trees = Vec::new();
    let mut heaps = Vec::new();
    for g in groups {
        match link::storage_of(s, *g) {
            Ok(LinkStorage::SymbolTable { btree, heap }) => {
                trees.push(btree);
                heaps.push(heap);
            }
            Ok(LinkStorage::Compact) => {
                if let Ok(links) = link::links(s, *g) {
                    members.extend(links.into_iter().filter_map(|(_, v)| match v {
                        link::LinkValue::Hard(a) => Some(a),
                        _ => None,
                    }));
                }
            }
            // Dense storage is read as it is listed.
            _ => {}
        }
    }
    // The B-tree roots and heap headers of every group at once.
    let mut ask: Vec<(Addr, u64)> = trees.iter().map(|a| (*a, node_len as u64)).collect();
    ask.extend(heaps.iter().map(|a| (*a, heap_len as u64)));
    let mut snods: Vec<Addr> = Vec::new();
    for _ in 0..MAX_DEPTH {
        if ask.is_empty() {
            break;
        }
        let _ = s.storage.prefetch(&ask);
        ask.clear();
        // Heap data segments (asked for with the next level of nodes).
        for h in heaps.drain(..) {
            if let Some(b) = bytes(s, h, heap_len)
                && let Ok(lh) = LocalHeap::decode(&b, h, sizes)
            {
                ask.push((lh.data_segment_address, lh.data_segment_size.min(MAX_HEAP)));
            }
        }
        let mut next = Vec::new();
        for t in trees.drain(..) {
            let Some(b) = bytes(s, t, node_len) else {
                continue;
            };
            let Ok(node) = Node::<GroupKey>::decode(&b, t, sizes, s.k.group_internal, ()) else {
                continue;
            };
            if node.level == 0 {
                snods.extend(node.children.iter().copied());
                ask.extend(node.children.iter().map(|c| (*c, snod_len as u64)));
            } else {
                next.extend(node.children.iter().copied());
                ask.extend(node.children.iter().map(|c| (*c, node_len as u64)));
            }
        }
        trees = next;
    }
    // The symbol table nodes are cached now: their entries name the members' headers.
    for n in snods {
        if let Some(b) = bytes(s, n, snod_len)
            && let Ok(node) = SymbolTableNode::decode(&b, n, sizes, s.k.group_leaf)
        {
            members.extend(node.entries.iter().filter_map(|e| e.object_header));
        }
    }
    let heads: Vec<(Addr, u64)> = members.iter().map(|a| (*a, HEADER_PREFETCH)).collect();
    if !heads.is_empty() {
        let _ = s.storage.prefetch(&heads);
    }
    // Opening a chunked dataset reads its chunk index's root: every member's at once.
    let roots: Vec<(Addr, u64)> = members
        .iter()
        .filter_map(|a| {
            s.messages(*a).ok()?.into_iter().find_map(|m| match m {
                Message::DataLayout(DataLayout::Chunked(l)) => l.address,
                _ => None,
            })
        })
        .map(|a| (a, INDEX_PREFETCH))
        .collect();
    if !roots.is_empty() {
        let _ = s.storage.prefetch(&roots);
    }
    members
}
