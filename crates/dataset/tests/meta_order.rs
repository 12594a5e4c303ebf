//! Every metadata block a flush writes goes through the metadata cache, children before
//! parents: object header chunks, fractal heap blocks of dense groups and dense attributes,
//! global heap collections of variable-length values, and the chunk indexes and name indexes
//! beside them.
//!
//! Two checks over traced flushes. [`check_write_order`] replays the cache's own trace (no
//! block written while a block it declared a dependency on is dirty). The second does not
//! trust the declared dependencies at all: it reads each written object header and heap
//! header back from the file, finds the blocks its bytes point at (a continuation chunk, a
//! chunk index, a heap and its name index, a global heap collection), and fails when any of
//! them was written after it in the same flush. A dependency missing from the code (say, a
//! header's on the collections of its attributes' values) lets the cache write blocks in
//! address order, parents first when they were allocated first, and this test fails there.

#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use h5chunk::libver::{Libver, LibverBounds};
use h5chunk::storage::MemStorage;
use h5chunk::{File, FileOptions, OpenOptions};
use h5chunk_cache::{Key, TraceEvent, WriteTrace, check_write_order};
use h5chunk_format::message::{Attribute, DataLayout, DatatypeClass, Message, MessageType};
use h5chunk_format::object_header::ObjectHeader;
use h5chunk_format::{Addr, Sizes};

/// The blocks the messages of one header chunk point at, decoded here with the format crate
/// alone.
fn pointers(messages: &[h5chunk_format::object_header::RawMessage], at: Addr) -> Vec<Addr> {
    let sizes = Sizes::DEFAULT;
    let mut out = Vec::new();
    for m in messages {
        if m.kind == MessageType::ATTRIBUTE_INFO {
            // version, flags, [max creation index], heap, name index, [order index]
            let flags = m.data[1];
            let mut p = 2 + if flags & 1 != 0 { 2 } else { 0 };
            let n = if flags & 2 != 0 { 3 } else { 2 };
            for _ in 0..n {
                let a = u64::from_le_bytes(m.data[p..p + 8].try_into().unwrap());
                if a != u64::MAX {
                    out.push(Addr(a));
                }
                p += 8;
            }
            continue;
        }
        if m.kind == MessageType::ATTRIBUTE {
            let mut d = h5chunk_format::cursor::Decoder::new(&m.data, at, sizes, "attribute");
            let a = Attribute::decode(&mut d).unwrap();
            if matches!(a.datatype.class, DatatypeClass::VarLen { .. }) {
                let n = h5chunk_format::global_heap::HeapId::encoded_len(sizes);
                for e in a.data.chunks_exact(n) {
                    let id = h5chunk_format::global_heap::HeapId::decode(e, at, sizes).unwrap();
                    out.extend(id.collection);
                }
            }
            continue;
        }
        match Message::decode(m.kind, &m.data, at, sizes) {
            Ok(Message::Continuation(c)) => out.push(c.offset),
            Ok(Message::DataLayout(DataLayout::Chunked(l))) => out.extend(l.address),
            Ok(Message::LinkInfo(l)) => out.extend(
                [
                    l.fractal_heap_address,
                    l.name_index_address,
                    l.creation_order_index_address,
                ]
                .into_iter()
                .flatten(),
            ),
            Ok(Message::SymbolTable(s)) => out.extend([s.btree_address, s.local_heap_address]),
            _ => {}
        }
    }
    out
}

/// The dense storage a header chunk's link info and attribute info messages name: each
/// heap with its indexes.
fn dense_storage(
    messages: &[h5chunk_format::object_header::RawMessage],
    at: Addr,
) -> Vec<(Addr, Vec<Addr>)> {
    let mut out = Vec::new();
    for m in messages {
        if m.kind == MessageType::ATTRIBUTE_INFO {
            let flags = m.data[1];
            let p = 2 + if flags & 1 != 0 { 2 } else { 0 };
            let a = |i: usize| {
                let v = u64::from_le_bytes(m.data[p + 8 * i..p + 8 * i + 8].try_into().unwrap());
                (v != u64::MAX).then_some(Addr(v))
            };
            if let Some(heap) = a(0) {
                let orders = if flags & 2 != 0 { a(2) } else { None };
                out.push((heap, [a(1), orders].into_iter().flatten().collect()));
            }
        } else if m.kind == MessageType::LINK_INFO
            && let Ok(Message::LinkInfo(l)) = Message::decode(m.kind, &m.data, at, Sizes::DEFAULT)
            && let Some(heap) = l.fractal_heap_address
        {
            let indexes = [l.name_index_address, l.creation_order_index_address];
            out.push((heap, indexes.into_iter().flatten().collect()));
        }
    }
    out
}

/// For each block written in `trace`: the position of its last write and its type.
fn writes(trace: &WriteTrace) -> HashMap<Addr, (usize, &'static str)> {
    let mut out = HashMap::new();
    for (i, e) in trace.events.iter().enumerate() {
        if let TraceEvent::Written {
            key: Key::Entry(a),
            type_name,
            ..
        } = e
        {
            out.insert(*a, (i, *type_name));
        }
    }
    out
}

/// Every header chunk and heap header `trace` wrote was written after every block it points
/// at that the same flush wrote; the type names written. `bytes`: the file after the flush.
fn pointers_written_first(trace: &WriteTrace, bytes: &[u8], what: &str) -> BTreeSet<&'static str> {
    let written = writes(trace);
    let read = |a: Addr, n: u64| -> Result<Vec<u8>, h5chunk_format::Error> {
        let end = (a.get() + n).min(bytes.len() as u64) as usize;
        Ok(bytes[a.get() as usize..end].to_vec())
    };
    // Whether the block at `a` was dirty (changed and not written since) at event `at`, from
    // the trace's own record of changes and writes.
    let dirty_at = |a: Addr, at: usize| {
        trace.events[..at]
            .iter()
            .rev()
            .find_map(|e| match e {
                TraceEvent::Dirtied(Key::Entry(k)) if *k == a => Some(true),
                TraceEvent::Written {
                    key: Key::Entry(k), ..
                } if *k == a => Some(false),
                _ => None,
            })
            .unwrap_or(false)
    };
    let mut checked = 0;
    let mut order = |parent: Addr, child: Addr, how: &str| {
        let (p, _) = written[&parent];
        if let Some(&(c, t)) = written.get(&child) {
            assert!(
                !dirty_at(child, p),
                "{what}: {how} at {parent} written (event {p}) while the {t} at {child} it \
                 points at was still to be written (event {c})"
            );
            checked += 1;
        }
    };
    let mut headers = BTreeSet::new();
    for (&at, &(_, t)) in &written {
        if t == "OHDR" || t == "object header v1" {
            // Chunk 0 of a header starts with its prefix; continuation chunks are reached
            // from their header's chunk 0.
            if let Ok(h) = ObjectHeader::read_hinted(at, Sizes::DEFAULT, 512, read) {
                headers.insert(h.addr());
                for i in 0..h.chunk_count() {
                    let c = h.chunk(i).unwrap();
                    if written.contains_key(&c.addr) {
                        for child in pointers(&c.messages, at) {
                            order(c.addr, child, "an object header chunk");
                        }
                    }
                    // A name index holds IDs of objects in its heap: it follows the heap.
                    for (heap, indexes) in dense_storage(&c.messages, at) {
                        for index in indexes {
                            if written.contains_key(&index) {
                                order(index, heap, "a name or creation-order index");
                            }
                        }
                    }
                }
            }
        }
        if t == "FRHP" {
            let b = read(at, 512).unwrap();
            let h = h5chunk_format::fractal_heap::Header::decode(&b, at, Sizes::DEFAULT).unwrap();
            for child in [h.root, h.huge_btree].into_iter().flatten() {
                order(at, child, "a fractal heap header");
            }
            // A root indirect block, and its children.
            if let (Some(root), rows @ 1..) = (h.root, u32::from(h.root_rows))
                && written.contains_key(&root)
            {
                let b = read(root, h.indirect_len(Sizes::DEFAULT, rows) as u64).unwrap();
                let ib = h5chunk_format::fractal_heap::IndirectBlock::decode(
                    &b,
                    root,
                    Sizes::DEFAULT,
                    &h,
                    at,
                    rows,
                )
                .unwrap();
                for child in ib.children.iter().filter_map(|c| c.addr) {
                    order(root, child, "a fractal heap indirect block");
                }
            }
        }
    }
    assert!(
        checked > 0,
        "{what}: no pointer between two blocks of one flush checked"
    );
    written.values().map(|&(_, t)| t).collect()
}

fn file(bounds: LibverBounds) -> (Arc<MemStorage>, File) {
    let mem = Arc::new(MemStorage::new());
    let f = FileOptions {
        trace: true,
        bounds,
        ..FileOptions::default()
    }
    .create_on(Arc::clone(&mem) as Arc<dyn h5chunk::storage::Storage>)
    .unwrap();
    // The flush that made the file is not one of those checked: a block it wrote may be
    // changed and written again by the next (the root group's B-tree), its parent not.
    f.take_write_trace();
    (mem, f)
}

/// Flush `f`, check both orders, and return the types written.
fn flush_and_check(f: &File, mem: &MemStorage, what: &str) -> BTreeSet<&'static str> {
    f.flush().unwrap();
    let trace = f.take_write_trace();
    check_write_order(&trace).unwrap_or_else(|v| panic!("{what}: {v}"));
    pointers_written_first(&trace, &mem.to_vec(), what)
}

/// Groups with many members, objects with many attributes (dense under the 1.8+ format),
/// variable-length string attributes, and a chunked dataset: made, flushed, added to,
/// flushed again.
fn grow(f: &File, mem: &MemStorage, what: &str) -> BTreeSet<&'static str> {
    let mut types = BTreeSet::new();
    let g = f.create_group("g").unwrap();
    for i in 0..12 {
        g.create_group(&format!("member{i:02}")).unwrap();
    }
    let d = f
        .new_dataset::<i32>()
        .shape(&[0, 3])
        .max_shape(&[None, Some(3)])
        .chunk(&[4, 3])
        .create("d")
        .unwrap();
    for i in 0..12 {
        d.attrs().set(&format!("attr{i:02}"), &[i, i + 1]).unwrap();
    }
    d.attrs()
        .set_strs("names", &["one", "two", "three"])
        .unwrap();
    d.append(&[1, 2, 3]).unwrap();
    // A group of few members and many attributes: its header points at nothing but its
    // attributes' dense storage.
    let h = f.create_group("h").unwrap();
    for i in 0..12 {
        h.attrs().set(&format!("attr{i:02}"), &[i]).unwrap();
    }
    types.extend(flush_and_check(f, mem, &format!("{what}, first flush")));
    // Added to objects whose headers and heaps were allocated before: their new blocks lie
    // past them, so the cache's address order alone would write the parents first.
    for i in 12..40 {
        g.create_group(&format!("member{i:02}")).unwrap();
        d.attrs().set(&format!("attr{i:02}"), &[i; 40]).unwrap();
    }
    f.attrs().set_strs("history", &["made", "grown"]).unwrap();
    d.attrs().set_strs("more names", &["four", "five"]).unwrap();
    g.attrs().set_str("title", "a group").unwrap();
    for i in 12..300 {
        h.attrs().set(&format!("attr{i:04}"), &[i; 30]).unwrap();
    }
    for n in 0..50 {
        d.append(&[n, n, n]).unwrap();
    }
    types.extend(flush_and_check(f, mem, &format!("{what}, second flush")));
    types
}

#[test]
fn latest_format_flushes_write_every_block_after_what_it_points_at() {
    let (mem, f) = file(LibverBounds::new(Libver::Latest, Libver::Latest).unwrap());
    let types = grow(&f, &mem, "latest");
    for t in ["OHDR", "FRHP", "FHIB", "FHDB", "GCOL", "BTHD", "BTLF"] {
        assert!(
            types.contains(t),
            "no {t} written through the cache: {types:?}"
        );
    }
    drop(f);
    let f = OpenOptions::default()
        .open_on(Arc::new(MemStorage::from_vec(mem.to_vec())))
        .unwrap();
    assert_eq!(f.group("g").unwrap().members().unwrap().len(), 40);
    let d = f.dataset("d").unwrap();
    assert_eq!(
        d.attrs().get("attr39").unwrap().values::<i32>().unwrap(),
        vec![39; 40]
    );
    assert_eq!(d.read::<i32>().unwrap().len(), 51 * 3);
}

#[test]
fn earliest_format_flushes_write_every_block_after_what_it_points_at() {
    let (mem, f) = file(LibverBounds::default());
    let types = grow(&f, &mem, "earliest");
    for t in ["object header v1", "GCOL"] {
        assert!(
            types.contains(t),
            "no {t} written through the cache: {types:?}"
        );
    }
}
