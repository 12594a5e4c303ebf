//! Global heap collection (`GCOL`, version 1): where variable-length data (strings, sequences)
//! of datasets and attributes lives; an element holds a heap ID that names a collection and an
//! object in it.
//!
//! Collection header (8 + L bytes):
//!
//! | field           | size | notes                                             |
//! |-----------------|------|---------------------------------------------------|
//! | signature       | 4    | `GCOL`                                            |
//! | version         | 1    | 1                                                 |
//! | reserved        | 3    | zero                                              |
//! | collection size | L    | bytes of the whole collection, header included    |
//!
//! Then objects, each:
//!
//! | field           | size | notes                                             |
//! |-----------------|------|---------------------------------------------------|
//! | object index    | 2    | 1 and up; 0 is the free space, which ends the list |
//! | reference count | 2    |                                                   |
//! | reserved        | 4    | zero                                              |
//! | object size     | L    | bytes of data                                     |
//! | data            | var  | padded with zeros to a multiple of 8              |
//!
//! A variable-length element (a [`HeapId`] with its length) is: length (u32, elements of the
//! sequence or bytes of the string), collection address (O bytes), object index (u32). No
//! checksum.

use crate::addr::Addr;
use crate::cursor::Decoder;
use crate::error::Result;
use crate::sizes::Sizes;

/// The global heap collection signature.
pub const SIGNATURE: [u8; 4] = *b"GCOL";

const STRUCTURE: &str = "GCOL";

/// Bytes of a collection's header: what to read first to learn the collection's size.
pub fn header_len(sizes: Sizes) -> usize {
    8usize.saturating_add(usize::from(sizes.lengths()))
}

/// The collection's size, from its header.
pub fn collection_size(header: &[u8], at: Addr, sizes: Sizes) -> Result<u64> {
    let mut d = Decoder::new(header, at, sizes, STRUCTURE);
    d.signature(&SIGNATURE)?;
    let v_at = d.addr();
    let version = d.u8()?;
    if version != 1 {
        return Err(d.bad_version(v_at, version));
    }
    crate::message::reserved(&mut d, 3)?;
    let size_at = d.addr();
    let size = d.length()?;
    if size < header_len(sizes) as u64 {
        return Err(d.bad_value(size_at, "collection size", size));
    }
    Ok(size)
}

/// One object of a collection.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct HeapObject {
    /// Its index (1 and up).
    pub index: u16,
    /// Its reference count.
    pub refcount: u16,
    /// Its data, without padding.
    pub data: Vec<u8>,
}

/// A decoded collection: its objects, in stored order.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct GlobalHeapCollection {
    /// The collection's size in bytes.
    pub size: u64,
    /// The objects before the free space.
    pub objects: Vec<HeapObject>,
}

impl GlobalHeapCollection {
    /// Decode a whole collection (`bytes` as long as its stored size).
    pub fn decode(bytes: &[u8], at: Addr, sizes: Sizes) -> Result<GlobalHeapCollection> {
        let size = collection_size(bytes, at, sizes)?;
        let mut d = Decoder::new(bytes, at, sizes, STRUCTURE);
        let mut d = d.sub(usize::try_from(size).unwrap_or(usize::MAX))?;
        d.skip(header_len(sizes))?;
        let object_header = 8usize.saturating_add(usize::from(sizes.lengths()));
        let mut objects = Vec::new();
        while d.remaining() >= object_header {
            let index = d.u16()?;
            if index == 0 {
                break;
            }
            let refcount = d.u16()?;
            crate::message::reserved(&mut d, 4)?;
            let len = d.length()?;
            let n = d.check_count(len, 1)?;
            let data = d.bytes(n)?.to_vec();
            // The padding, where the collection still holds it.
            let pad = n.next_multiple_of(8).saturating_sub(n).min(d.remaining());
            d.skip(pad)?;
            objects.push(HeapObject {
                index,
                refcount,
                data,
            });
        }
        Ok(GlobalHeapCollection { size, objects })
    }

    /// The data of object `index`.
    pub fn object(&self, index: u32) -> Option<&[u8]> {
        self.objects
            .iter()
            .find(|o| u32::from(o.index) == index)
            .map(|o| o.data.as_slice())
    }
}

/// The smallest collection libhdf5 makes (`H5HG_MINSIZE`).
pub const MIN_COLLECTION: usize = 4096;

/// A collection holding `objects` as objects 1, 2, ... (each padded to 8 bytes), then the free
/// space: at least [`MIN_COLLECTION`] bytes, a multiple of 4096.
pub fn encode_collection(objects: &[&[u8]], sizes: Sizes) -> crate::Result<Vec<u8>> {
    let l = usize::from(sizes.lengths());
    let object_header = 8usize.saturating_add(l);
    let used = objects.iter().fold(header_len(sizes), |n, o| {
        n.saturating_add(object_header)
            .saturating_add(o.len().next_multiple_of(8))
    });
    // Room for the free-space object's header after the objects.
    let size = used
        .saturating_add(object_header)
        .next_multiple_of(MIN_COLLECTION)
        .max(MIN_COLLECTION);
    let mut out = Vec::with_capacity(size);
    let mut e = crate::cursor::Encoder::new(&mut out, sizes, STRUCTURE);
    e.bytes(&SIGNATURE);
    e.u8(1);
    e.bytes(&[0; 3]);
    e.length(size as u64, "collection size")?;
    for (i, o) in objects.iter().enumerate() {
        let index = u16::try_from(i.saturating_add(1)).map_err(|_| crate::Error::Unencodable {
            structure: STRUCTURE,
            reason: format!("{} objects in one collection", objects.len()),
        })?;
        e.u16(index);
        e.u16(1);
        e.bytes(&[0; 4]);
        e.length(o.len() as u64, "object size")?;
        e.bytes(o);
        e.bytes(&vec![
            0;
            o.len().next_multiple_of(8).saturating_sub(o.len())
        ]);
    }
    // The free space: index 0, its size counting its own header.
    e.u16(0);
    e.u16(0);
    e.bytes(&[0; 4]);
    e.length(size.saturating_sub(used) as u64, "free space size")?;
    out.resize(size, 0);
    Ok(out)
}

/// A variable-length element: its length and where its data lives.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct HeapId {
    /// Elements of the sequence, or bytes of the string.
    pub len: u32,
    /// The collection's address (`None`: undefined, an empty or null element).
    pub collection: Option<Addr>,
    /// The object's index in the collection.
    pub index: u32,
}

impl HeapId {
    /// Bytes of one stored variable-length element.
    pub fn encoded_len(sizes: Sizes) -> usize {
        8usize.saturating_add(usize::from(sizes.offsets()))
    }

    /// Encode one element.
    pub fn encode(&self, out: &mut Vec<u8>, sizes: Sizes) -> crate::Result<()> {
        let mut e = crate::cursor::Encoder::new(out, sizes, "variable-length element");
        e.u32(self.len);
        e.offset(self.collection, "collection address")?;
        e.u32(self.index);
        Ok(())
    }

    /// Decode one element.
    pub fn decode(bytes: &[u8], at: Addr, sizes: Sizes) -> Result<HeapId> {
        let mut d = Decoder::new(bytes, at, sizes, "variable-length element");
        let len = d.u32()?;
        let collection = d.offset()?;
        let index = d.u32()?;
        Ok(HeapId {
            len,
            collection,
            index,
        })
    }
}

#[cfg(test)]
#[allow(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::arithmetic_side_effects
)]
mod tests {
    use super::*;
    use crate::Error;

    /// A collection of `objects` (index, data), padded to `size` with a free-space object.
    fn build(objects: &[(u16, &[u8])], size: usize) -> Vec<u8> {
        let mut b = b"GCOL\x01\0\0\0".to_vec();
        b.extend_from_slice(&(size as u64).to_le_bytes());
        for (index, data) in objects {
            b.extend_from_slice(&index.to_le_bytes());
            b.extend_from_slice(&1u16.to_le_bytes());
            b.extend_from_slice(&[0; 4]);
            b.extend_from_slice(&(data.len() as u64).to_le_bytes());
            b.extend_from_slice(data);
            b.resize(b.len().next_multiple_of(8), 0);
        }
        let free = size - b.len();
        b.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0]);
        b.extend_from_slice(&(free as u64).to_le_bytes());
        b.resize(size, 0);
        b
    }

    #[test]
    fn objects_are_found_by_index() {
        let bytes = build(&[(1, b"K"), (2, b"kelvin\0"), (7, b"")], 4096);
        let at = Addr(0x800);
        assert_eq!(
            collection_size(&bytes[..header_len(Sizes::DEFAULT)], at, Sizes::DEFAULT).unwrap(),
            4096
        );
        let c = GlobalHeapCollection::decode(&bytes, at, Sizes::DEFAULT).unwrap();
        assert_eq!(c.objects.len(), 3);
        assert_eq!(c.object(1), Some(&b"K"[..]));
        assert_eq!(c.object(2), Some(&b"kelvin\0"[..]));
        assert_eq!(c.object(7), Some(&b""[..]));
        assert_eq!(c.object(3), None);
    }

    #[test]
    fn rejects_damage() {
        let bytes = build(&[(1, b"abc")], 64);
        for n in 0..header_len(Sizes::DEFAULT) {
            assert!(GlobalHeapCollection::decode(&bytes[..n], Addr(0), Sizes::DEFAULT).is_err());
        }
        let mut b = bytes.clone();
        b[0] = b'X';
        assert!(matches!(
            GlobalHeapCollection::decode(&b, Addr(0), Sizes::DEFAULT),
            Err(Error::BadSignature { .. })
        ));
        let mut b = bytes.clone();
        b[4] = 2;
        assert!(matches!(
            GlobalHeapCollection::decode(&b, Addr(0), Sizes::DEFAULT),
            Err(Error::BadVersion { .. })
        ));
        // An object claiming more bytes than the collection holds: refused, nothing allocated.
        let mut b = bytes.clone();
        b[24..32].copy_from_slice(&(1u64 << 50).to_le_bytes());
        assert!(matches!(
            GlobalHeapCollection::decode(&b, Addr(0), Sizes::DEFAULT),
            Err(Error::Truncated { .. })
        ));
        // A collection size past the bytes given.
        let mut b = bytes.clone();
        b[8..16].copy_from_slice(&4096u64.to_le_bytes());
        assert!(GlobalHeapCollection::decode(&b, Addr(0), Sizes::DEFAULT).is_err());
    }

    #[test]
    fn encoded_collections_decode() {
        let objects: [&[u8]; 3] = [b"K", b"", b"degrees_north"];
        let bytes = encode_collection(&objects, Sizes::DEFAULT).unwrap();
        assert_eq!(bytes.len(), 4096);
        let c = GlobalHeapCollection::decode(&bytes, Addr(0x800), Sizes::DEFAULT).unwrap();
        assert_eq!(c.objects.len(), 3);
        for (i, o) in objects.iter().enumerate() {
            assert_eq!(c.object(i as u32 + 1), Some(*o));
        }
        // The free space's size: from its own header to the end.
        // Header, three object headers, "K" padded to 8, "" (nothing), "degrees_north" padded.
        let used = 16 + 3 * 16 + 8 + 16;
        assert_eq!(&bytes[used..used + 2], &[0, 0]);
        assert_eq!(
            u64::from_le_bytes(bytes[used + 8..used + 16].try_into().unwrap()),
            (4096 - used) as u64
        );
        // Larger contents take whole multiples of 4096.
        let big = vec![7u8; 5000];
        let bytes = encode_collection(&[&big], Sizes::DEFAULT).unwrap();
        assert_eq!(bytes.len(), 8192);
        let c = GlobalHeapCollection::decode(&bytes, Addr(0), Sizes::DEFAULT).unwrap();
        assert_eq!(c.object(1), Some(&big[..]));
        let id = HeapId {
            len: 5000,
            collection: Some(Addr(0x1000)),
            index: 1,
        };
        let mut out = Vec::new();
        id.encode(&mut out, Sizes::DEFAULT).unwrap();
        assert_eq!(HeapId::decode(&out, Addr(0), Sizes::DEFAULT).unwrap(), id);
    }

    #[test]
    fn heap_ids_decode() {
        let mut b = 3u32.to_le_bytes().to_vec();
        b.extend_from_slice(&0x1234u64.to_le_bytes());
        b.extend_from_slice(&5u32.to_le_bytes());
        assert_eq!(b.len(), HeapId::encoded_len(Sizes::DEFAULT));
        assert_eq!(
            HeapId::decode(&b, Addr(0), Sizes::DEFAULT).unwrap(),
            HeapId {
                len: 3,
                collection: Some(Addr(0x1234)),
                index: 5
            }
        );
        b[4..12].copy_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(
            HeapId::decode(&b, Addr(0), Sizes::DEFAULT)
                .unwrap()
                .collection,
            None
        );
        assert!(HeapId::decode(&b[..10], Addr(0), Sizes::DEFAULT).is_err());
    }
}
