//! Values that live outside their element's bytes, and the encoding of new values: shared by
//! attributes and datasets alike.
//!
//! Variable-length strings and sequences keep their bytes in global heap collections, the
//! element holding a heap ID (`store_objects` writes new collections, `heap_strings` and
//! `heap_sequences` read them back, with one cap on the bytes a read may gather); object
//! references are the addresses of object headers, checked to exist (`encode_refs`); a new
//! attribute's or dataset's values arrive as [`NewValues`]; fixed-length strings lose their
//! padding in `unpad`.

use std::collections::HashMap;

use h5chunk_format::Addr;
use h5chunk_format::global_heap::{self, GlobalHeapCollection, HeapId};
use h5chunk_format::message::{Datatype, DatatypeClass, StringPadding, StringType};

use crate::error::{Error, Result};
use crate::store::Store;
use crate::types::{H5Type, TypeDesc};

/// A fixed-length string element without its padding.
pub(crate) fn unpad(e: &[u8], t: StringType) -> String {
    let s = match t.padding {
        StringPadding::NullTerminate => e.split(|&b| b == 0).next().unwrap_or_default(),
        StringPadding::NullPad => {
            let end = e
                .iter()
                .rposition(|&b| b != 0)
                .map_or(0, |i| i.saturating_add(1));
            e.get(..end).unwrap_or_default()
        }
        StringPadding::SpacePad => {
            let end = e
                .iter()
                .rposition(|&b| b != b' ' && b != 0)
                .map_or(0, |i| i.saturating_add(1));
            e.get(..end).unwrap_or_default()
        }
    };
    String::from_utf8_lossy(s).into_owned()
}

/// Objects per global heap collection written (the index is 16 bits; libhdf5's own
/// collections hold far fewer).
const OBJECTS_PER_COLLECTION: usize = 4096;

/// Store `objects` in new global heap collections (as many as they need); each one's heap ID
/// with `len` from `lens` (the string's bytes, or the sequence's elements).
///
/// `at_once`: the collections are written to the file now, not at the next flush: for a
/// dataset's values, whose chunks are written outside the metadata cache and must not reach
/// the file before the collections they point at. An attribute's collections wait for the
/// flush, where the header holding the attribute is written after them.
pub(crate) fn store_objects(
    f: &Store,
    objects: &[&[u8]],
    lens: &[u32],
    at_once: bool,
) -> Result<Vec<HeapId>> {
    let mut ids = Vec::with_capacity(objects.len());
    for (batch, lens) in objects
        .chunks(OBJECTS_PER_COLLECTION)
        .zip(lens.chunks(OBJECTS_PER_COLLECTION))
    {
        let heap = global_heap::encode_collection(batch, f.sizes)?;
        let at = f.allocate_raw(heap.len() as u64)?;
        f.put_image::<crate::meta::GlobalHeap>(at, heap, &[])?;
        if at_once {
            // A collection points at nothing: writing it first keeps the order.
            f.cache.flush_entry(at)?;
        }
        for (i, &len) in lens.iter().enumerate() {
            ids.push(HeapId {
                len,
                collection: Some(at),
                index: u32::try_from(i.saturating_add(1)).unwrap_or(u32::MAX),
            });
        }
    }
    Ok(ids)
}

/// Strings stored as variable-length elements: their heap IDs, packed (every string is a heap
/// object, the empty one too: libhdf5 reads a zero-length element's object all the same).
/// `at_once` as for [`store_objects`].
pub(crate) fn string_ids(f: &Store, strings: &[&str], at_once: bool) -> Result<Vec<u8>> {
    let bytes: Vec<&[u8]> = strings.iter().map(|s| s.as_bytes()).collect();
    let lens = bytes
        .iter()
        .map(|b| u32::try_from(b.len()).map_err(|_| Error::arg("values", "a string over 4 GiB")))
        .collect::<Result<Vec<u32>>>()?;
    let mut data = Vec::new();
    for id in store_objects(f, &bytes, &lens, at_once)? {
        id.encode(&mut data, f.sizes)?;
    }
    Ok(data)
}

/// Most bytes of variable-length strings (or sequences) one call reads: past it, a file whose heap IDs name
/// the same large object many times would make a read allocate without bound. (4 GiB; 1 GiB
/// where addresses are 32 bits wide, as in WebAssembly.)
const MAX_STRING_BYTES: usize = if usize::BITS > 32 {
    (1u64 << 32) as usize
} else {
    1 << 30
};

/// The variable-length strings whose heap IDs are packed in `ids` (as stored), read from the
/// global heap (each collection once); a null ID is the empty string.
pub(crate) fn heap_strings(
    f: &Store,
    ids: &[u8],
    t: StringType,
    heaps: &mut HashMap<Addr, GlobalHeapCollection>,
) -> Result<Vec<String>> {
    let id_len = HeapId::encoded_len(f.sizes);
    let mut out = Vec::new();
    let mut total = 0usize;
    for e in ids.chunks_exact(id_len) {
        let id = HeapId::decode(e, Addr(0), f.sizes)?;
        out.push(match id.collection {
            Some(c) if id.len > 0 => {
                let bytes = heap_object(f, c, id.index, heaps)?;
                let len = usize::try_from(id.len).unwrap_or(usize::MAX);
                let s = bytes.get(..len).ok_or_else(|| {
                    Error::corrupt(
                        "global heap",
                        c,
                        format!("object {} holds {} bytes, not {len}", id.index, bytes.len()),
                    )
                })?;
                total = total.saturating_add(len);
                if total > MAX_STRING_BYTES {
                    return Err(Error::arg(
                        "selection",
                        "more than 4 GiB of strings in one read: read them in slices",
                    ));
                }
                unpad(s, t)
            }
            _ => String::new(),
        });
    }
    Ok(out)
}

/// The variable-length sequences whose heap IDs are packed in `ids`, each as its element count
/// and bytes (`elem` bytes an element), read from the global heap.
pub(crate) fn heap_sequences(f: &Store, ids: &[u8], elem: usize) -> Result<Vec<(u32, Vec<u8>)>> {
    let mut heaps = HashMap::new();
    let id_len = HeapId::encoded_len(f.sizes);
    let mut out = Vec::new();
    let mut total = 0usize;
    for e in ids.chunks_exact(id_len) {
        let id = HeapId::decode(e, Addr(0), f.sizes)?;
        out.push(match id.collection {
            Some(c) if id.len > 0 => {
                let bytes = heap_object(f, c, id.index, &mut heaps)?;
                // The stored length times the element size, checked against the object's
                // bytes before it sizes the copy.
                let len = usize::try_from(id.len)
                    .ok()
                    .and_then(|n| n.checked_mul(elem))
                    .unwrap_or(usize::MAX);
                let b = bytes.get(..len).ok_or_else(|| {
                    Error::corrupt(
                        "global heap",
                        c,
                        format!(
                            "object {} holds {} bytes, not {} elements of {elem} bytes",
                            id.index,
                            bytes.len(),
                            id.len
                        ),
                    )
                })?;
                total = total.saturating_add(len);
                if total > MAX_STRING_BYTES {
                    return Err(Error::arg(
                        "selection",
                        "more than 4 GiB of sequences in one read: read them in slices",
                    ));
                }
                (id.len, b.to_vec())
            }
            _ => (0, Vec::new()),
        });
    }
    Ok(out)
}

/// Object `index` of the global heap collection at `at` (collections read once per call).
fn heap_object<'h>(
    f: &Store,
    at: Addr,
    index: u32,
    heaps: &'h mut HashMap<Addr, GlobalHeapCollection>,
) -> Result<&'h [u8]> {
    let collection = match heaps.entry(at) {
        std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
        std::collections::hash_map::Entry::Vacant(e) => {
            let bytes = match f.cached_image::<crate::meta::GlobalHeap>(at) {
                // Made by this writer and not yet written.
                Some(bytes) => bytes,
                None => {
                    let header = f.read_meta(at, global_heap::header_len(f.sizes) as u64)?;
                    let size = global_heap::collection_size(&header, at, f.sizes)?;
                    // The store checks the size against the end of the file before
                    // allocating.
                    f.read_meta(at, size)?
                }
            };
            e.insert(GlobalHeapCollection::decode(&bytes, at, f.sizes)?)
        }
    };
    collection.object(index).ok_or_else(|| {
        Error::corrupt(
            "global heap",
            at,
            format!("no object {index} in the collection"),
        )
    })
}

/// A new attribute's values.
pub(crate) enum NewValues<'a> {
    /// Numbers of `T`, little-endian.
    Numbers(TypeDesc, Vec<u8>),
    /// Strings, stored variable-length UTF-8.
    Strings(&'a [&'a str]),
    /// Elements of any fixed-size type, as stored.
    Raw(Datatype, Vec<u8>),
    /// Variable-length sequences of `base` elements: each sequence's element count and
    /// packed bytes (stored in a new global heap collection; empty ones as null elements).
    Sequences(Datatype, Vec<(u32, Vec<u8>)>),
}

/// The object references to `targets` as stored (8-byte addresses), each checked to be an
/// object header of the file: what a reference names must exist, as libhdf5's `H5Rcreate`
/// insists.
pub(crate) fn encode_refs(store: &Store, targets: &[u64]) -> Result<Vec<u8>> {
    if store.sizes.offsets() != 8 {
        return Err(Error::Unsupported(
            "object references in files of other than 8-byte addresses",
        ));
    }
    let mut out = Vec::with_capacity(targets.len().saturating_mul(8));
    for &t in targets {
        store
            .header_version(h5chunk_format::Addr(t))
            .map_err(|e| Error::arg("targets", format!("{t} is not an object's address: {e}")))?;
        out.extend_from_slice(&t.to_le_bytes());
    }
    Ok(out)
}

/// Refuse a type whose elements are not stored in place: variable-length strings and
/// sequences (heap IDs), and any compound or array holding one.
pub(crate) fn check_fixed_size(t: &Datatype) -> Result<()> {
    fn variable(t: &Datatype) -> bool {
        match &t.class {
            DatatypeClass::VarLen { .. } => true,
            DatatypeClass::Compound(members) => members.iter().any(|m| variable(&m.datatype)),
            DatatypeClass::Array { base, .. } => variable(base),
            _ => false,
        }
    }
    if t.size == 0 {
        return Err(Error::arg("datatype", "an element type of zero bytes"));
    }
    if variable(t) {
        return Err(Error::Unsupported(
            "raw attributes of variable-length types (their elements live in a heap)",
        ));
    }
    Ok(())
}

/// Little-endian bytes of `values`.
pub(crate) fn numbers<T: H5Type>(values: &[T]) -> NewValues<'static> {
    let mut le = vec![0u8; values.len().saturating_mul(T::DESC.size)];
    for (v, out) in values.iter().zip(le.chunks_exact_mut(T::DESC.size)) {
        v.write_le(out);
    }
    NewValues::Numbers(T::DESC, le)
}
