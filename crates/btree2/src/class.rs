//! Record classes: what a tree's records mean, how they are encoded and how they are ordered.
//!
//! The tree code treats records as values of [`RecordClass::Record`] ordered by a key that each
//! record carries. A class gives the tree type byte stored in the header and every node, the
//! fixed record size, the record codec and the order. Chunk records of types 10 and 11 are
//! [`ChunkClass`]; libhdf5's other clients (links by name hash, attributes, fractal-heap huge
//! objects) are further classes of their own, with no change to the tree.

use core::cmp::Ordering;
use core::fmt;

use h5chunk_format::chunk_record::{ChunkRecord, MAX_RANK, RecordCodec, Scaled};
use h5chunk_format::{Addr, Error as FormatError};

/// The meaning of a tree's records.
pub trait RecordClass: fmt::Debug + Send + Sync + 'static {
    /// A decoded record.
    type Record: Clone + fmt::Debug + Send + Sync + 'static;
    /// What records are ordered by (a record's key is borrowed from it).
    type Key: ?Sized + fmt::Debug;

    /// The tree type stored in the header and in every node (10, 11, 5, ...).
    fn tree_type(&self) -> u8;

    /// Bytes of one encoded record.
    fn record_size(&self) -> usize;

    /// Decode one record of [`record_size`](Self::record_size) bytes found at file address `at`.
    fn decode(&self, raw: &[u8], at: Addr) -> h5chunk_format::Result<Self::Record>;

    /// Append one encoded record (exactly [`record_size`](Self::record_size) bytes).
    fn encode(&self, record: &Self::Record, out: &mut Vec<u8>) -> h5chunk_format::Result<()>;

    /// Encode one record into `slot`, its place in a node image. The default goes through
    /// [`encode`](Self::encode) and checks the length; classes on hot paths write in place.
    fn encode_slot(&self, record: &Self::Record, slot: &mut [u8]) -> h5chunk_format::Result<()> {
        let mut raw = Vec::with_capacity(slot.len());
        self.encode(record, &mut raw)?;
        if raw.len() != slot.len() {
            return Err(FormatError::Unencodable {
                structure: "v2 B-tree record",
                reason: format!(
                    "record class wrote {} bytes, record size is {}",
                    raw.len(),
                    slot.len()
                ),
            });
        }
        slot.copy_from_slice(&raw);
        Ok(())
    }

    /// Encode `records` into `raw`, one slot of [`record_size`](Self::record_size) bytes each
    /// (a node image's records; `raw` holds exactly as many slots). The default encodes slot by
    /// slot; a class can write a whole node's records in one loop.
    fn encode_slots(&self, records: &[Self::Record], raw: &mut [u8]) -> h5chunk_format::Result<()> {
        let rs = self.record_size();
        if rs == 0 {
            return Err(FormatError::Unencodable {
                structure: "v2 B-tree record",
                reason: "record size 0".into(),
            });
        }
        for (slot, r) in raw.chunks_exact_mut(rs).zip(records) {
            self.encode_slot(r, slot)?;
        }
        Ok(())
    }

    /// The key a record is ordered by.
    fn key<'r>(&self, record: &'r Self::Record) -> &'r Self::Key;

    /// How `key` compares with the key of `record`. Must be a total order consistent over all
    /// records of a tree (a total preorder when [`keys_repeat`](Self::keys_repeat)).
    fn compare(&self, key: &Self::Key, record: &Self::Record) -> Ordering;

    /// Whether two records of one tree may have equal keys. libhdf5's name indexes (types 5
    /// and 8) are keyed by a name's hash, and two names may share one: their records are
    /// ordered by the names, which live outside the tree (in a fractal heap), so the class
    /// cannot compare them on its own. The caller of each operation gives that order as a
    /// tie-break ([`BTree2::try_insert_by`](crate::BTree2::try_insert_by),
    /// [`get_by`](crate::BTree2::get_by), [`remove_by`](crate::BTree2::remove_by)), and
    /// [`get_all`](crate::BTree2::get_all) lists the records of one key. `false`, the
    /// default: a key names at most one record.
    fn keys_repeat(&self) -> bool {
        false
    }

    /// The keys of `records` flattened into one array, the same number of integers for each,
    /// ordered as those integer tuples compare (lexicographically) exactly as
    /// [`compare`](Self::compare) orders them; `None`, the default, when the class has no such
    /// form (lookups then compare record by record).
    fn flatten(&self, _records: &[Self::Record]) -> Option<Box<[u64]>> {
        None
    }

    /// `key` in [`flatten`](Self::flatten)'s form.
    fn flat_key<'k>(&self, _key: &'k Self::Key) -> Option<&'k [u64]> {
        None
    }

    /// Decode a node's records, `raw` holding them back to back (the first at file address
    /// `at`), onto `out`; with their keys in [`flatten`](Self::flatten)'s form when the class
    /// makes them in the same pass (`None`: flattened on first use). The default decodes
    /// record by record; a class on a hot path decodes a node's records in one loop.
    fn decode_records(
        &self,
        raw: &[u8],
        at: Addr,
        out: &mut Vec<Self::Record>,
    ) -> h5chunk_format::Result<Option<Box<[u64]>>> {
        let rs = self.record_size();
        if rs == 0 {
            return Ok(None);
        }
        out.reserve(raw.len().checked_div(rs).unwrap_or(0));
        for (i, slot) in raw.chunks_exact(rs).enumerate() {
            let off = (i as u64).saturating_mul(rs as u64);
            out.push(self.decode(slot, Addr(at.get().saturating_add(off)))?);
        }
        Ok(None)
    }
}

/// The error of a chunk record with the undefined address at `at`.
fn undefined_chunk(at: Addr) -> FormatError {
    // libhdf5 removes the record of a chunk that is not allocated; an undefined address here
    // can only come from damage.
    FormatError::Invalid {
        structure: "v2 B-tree chunk record",
        at,
        reason: "undefined chunk address".into(),
    }
}

/// One chunk in a v2 B-tree chunk index: its scaled coordinates and its record.
#[derive(Debug, PartialEq, Eq)]
pub struct ChunkEntry {
    /// Scaled chunk coordinates (chunk grid indices), dim 0 first.
    pub scaled: Scaled,
    /// Address, and for filtered chunks stored size and filter mask.
    pub record: ChunkRecord,
}

impl Clone for ChunkEntry {
    /// Coordinates of up to four dimensions (nearly every dataset) are copied into the inline
    /// buffer word by word, without the call to `memcpy` that the derived clone makes; batched
    /// appends clone every record once.
    #[inline]
    fn clone(&self) -> Self {
        ChunkEntry::new(&self.scaled, self.record)
    }
}

impl ChunkEntry {
    /// The entry of the chunk at `scaled`. Coordinates of up to four dimensions are copied into
    /// the inline buffer word by word, without a call to `memcpy` (a flush of appended chunks
    /// makes an entry of each).
    #[inline]
    pub fn new(scaled: &[u64], record: ChunkRecord) -> ChunkEntry {
        let scaled = match *scaled {
            [] => Scaled::new(),
            [a] => Scaled::from_buf_and_len([a, 0, 0, 0], 1),
            [a, b] => Scaled::from_buf_and_len([a, b, 0, 0], 2),
            [a, b, c] => Scaled::from_buf_and_len([a, b, c, 0], 3),
            [a, b, c, d] => Scaled::from_buf([a, b, c, d]),
            ref more => Scaled::from_slice(more),
        };
        ChunkEntry { scaled, record }
    }
}

impl ChunkClass {
    /// [`RecordClass::decode_records`] record by record, the keys flattened after.
    fn decode_each(
        &self,
        raw: &[u8],
        at: Addr,
        out: &mut Vec<ChunkEntry>,
    ) -> h5chunk_format::Result<Option<Box<[u64]>>> {
        let rs = self.record_size();
        if rs == 0 {
            return Ok(None);
        }
        out.reserve(raw.len().checked_div(rs).unwrap_or(0));
        for (i, slot) in raw.chunks_exact(rs).enumerate() {
            let off = (i as u64).saturating_mul(rs as u64);
            out.push(RecordClass::decode(
                self,
                slot,
                Addr(at.get().saturating_add(off)),
            )?);
        }
        Ok(self.flatten(out))
    }

    /// [`RecordClass::decode_records`] of unfiltered records of 8-byte addresses and `R`
    /// coordinates: slots of `8 + 8 R` bytes.
    #[inline]
    fn decode_rank<const R: usize>(
        &self,
        raw: &[u8],
        at: Addr,
        out: &mut Vec<ChunkEntry>,
    ) -> h5chunk_format::Result<Option<Box<[u64]>>> {
        let rs = self.record_size();
        if rs != R.saturating_add(1).saturating_mul(8) {
            return self.decode_each(raw, at, out);
        }
        let n = raw.len().checked_div(rs).unwrap_or(0);
        out.reserve(n);
        let start = out.len();
        let mut flat = Vec::with_capacity(n.saturating_mul(R));
        for (i, slot) in raw.chunks_exact(rs).enumerate() {
            let (words, _) = slot.as_chunks::<8>();
            let Some((head, coords)) = words.split_first() else {
                // Cannot happen (a slot is whole words); the general path if it did.
                out.truncate(start);
                return self.decode_each(raw, at, out);
            };
            let addr = u64::from_le_bytes(*head);
            if addr == u64::MAX {
                let off = (i as u64).saturating_mul(rs as u64);
                return Err(undefined_chunk(Addr(at.get().saturating_add(off))));
            }
            let mut buf = [0u64; 4];
            for (b, c) in buf.iter_mut().zip(coords) {
                *b = u64::from_le_bytes(*c);
            }
            flat.extend_from_slice(buf.get(..R).unwrap_or_default());
            out.push(ChunkEntry {
                scaled: Scaled::from_buf_and_len(buf, R),
                record: ChunkRecord {
                    addr: Some(Addr(addr)),
                    size: 0,
                    mask: 0,
                },
            });
        }
        Ok(Some(flat.into_boxed_slice()))
    }

    /// [`encode_slots`](RecordClass::encode_slots) of unfiltered records of 8-byte addresses
    /// and `R` coordinates in slots of `rs` bytes.
    #[inline]
    fn encode_rank<const R: usize>(
        &self,
        records: &[ChunkEntry],
        raw: &mut [u8],
        rs: usize,
    ) -> h5chunk_format::Result<()> {
        for (slot, r) in raw.chunks_exact_mut(rs).zip(records) {
            let fits = match (r.record.addr, <&[u64; R]>::try_from(&r.scaled[..])) {
                (Some(a), Ok(scaled)) => match slot.split_first_chunk_mut::<8>() {
                    Some((head, coords)) => {
                        match coords.as_chunks_mut::<8>().0.first_chunk_mut::<R>() {
                            Some(fields) => {
                                *head = a.get().to_le_bytes();
                                for (field, s) in fields.iter_mut().zip(scaled) {
                                    *field = s.to_le_bytes();
                                }
                                true
                            }
                            None => false,
                        }
                    }
                    None => false,
                },
                _ => false,
            };
            if !fits {
                // The checks and their message are `encode_slot`'s.
                self.encode_slot(r, slot)?;
            }
        }
        Ok(())
    }
}

/// Chunk records of tree type 10 (unfiltered: address and scaled coordinates) or 11 (filtered:
/// address, stored size, filter mask and scaled coordinates), of one rank up to 32, ordered
/// lexicographically by the scaled coordinates with dim 0 most significant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChunkClass {
    codec: RecordCodec,
    rank: usize,
}

/// `H5B2_CDSET_ID`: unfiltered chunk records.
pub const CHUNK_UNFILTERED: u8 = 10;
/// `H5B2_CDSET_FILT_ID`: filtered chunk records.
pub const CHUNK_FILTERED: u8 = 11;

impl ChunkClass {
    /// The class of a dataset of `rank` dimensions (the dataspace's rank, without the element
    /// size the layout message appends), with records as `codec` encodes them.
    pub fn new(codec: RecordCodec, rank: usize) -> Result<ChunkClass, crate::Error> {
        if rank == 0 || rank > MAX_RANK {
            return Err(crate::Error::InvalidArgument(format!(
                "chunk record rank {rank} not in 1..={MAX_RANK}"
            )));
        }
        Ok(ChunkClass { codec, rank })
    }

    /// The rank of the records.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The record codec.
    pub fn codec(&self) -> RecordCodec {
        self.codec
    }
}

impl RecordClass for ChunkClass {
    type Record = ChunkEntry;
    type Key = [u64];

    fn tree_type(&self) -> u8 {
        if self.codec.is_filtered() {
            CHUNK_FILTERED
        } else {
            CHUNK_UNFILTERED
        }
    }

    fn record_size(&self) -> usize {
        self.codec.bt2_record_size(self.rank)
    }

    fn decode(&self, raw: &[u8], at: Addr) -> h5chunk_format::Result<ChunkEntry> {
        let (record, scaled) = self.codec.decode_bt2(raw, at, self.rank)?;
        if record.addr.is_none() {
            return Err(undefined_chunk(at));
        }
        Ok(ChunkEntry { scaled, record })
    }

    /// Unfiltered records of 8-byte addresses and up to 4 dimensions (nearly every file): each
    /// record's address and coordinates read straight from its slot, and its coordinates
    /// copied into the flat keys in the same pass (every leaf a lookup loads is decoded whole).
    fn decode_records(
        &self,
        raw: &[u8],
        at: Addr,
        out: &mut Vec<ChunkEntry>,
    ) -> h5chunk_format::Result<Option<Box<[u64]>>> {
        if self.codec.is_filtered() || self.codec.element_size() != 8 {
            return self.decode_each(raw, at, out);
        }
        match self.rank {
            1 => self.decode_rank::<1>(raw, at, out),
            2 => self.decode_rank::<2>(raw, at, out),
            3 => self.decode_rank::<3>(raw, at, out),
            4 => self.decode_rank::<4>(raw, at, out),
            _ => self.decode_each(raw, at, out),
        }
    }

    fn encode(&self, r: &ChunkEntry, out: &mut Vec<u8>) -> h5chunk_format::Result<()> {
        if r.scaled.len() != self.rank || r.record.addr.is_none() {
            return Err(FormatError::Unencodable {
                structure: "v2 B-tree chunk record",
                reason: format!(
                    "{} coordinates for rank {}, address {:?}",
                    r.scaled.len(),
                    self.rank,
                    r.record.addr
                ),
            });
        }
        self.codec.encode_bt2(&r.record, &r.scaled, out)
    }

    fn encode_slot(&self, r: &ChunkEntry, slot: &mut [u8]) -> h5chunk_format::Result<()> {
        if r.scaled.len() != self.rank || r.record.addr.is_none() {
            // The checks and their message are `encode`'s.
            return RecordClass::encode(self, r, &mut Vec::new());
        }
        self.codec.encode_bt2_slot(&r.record, &r.scaled, slot)
    }

    /// Unfiltered records of 8-byte addresses (nearly every file): the address and the
    /// coordinates written straight into each slot, a node's records in one loop (a SWMR
    /// writer encodes the right-most leaf again on every flush).
    fn encode_slots(&self, records: &[ChunkEntry], raw: &mut [u8]) -> h5chunk_format::Result<()> {
        let rs = self.record_size();
        if self.codec.is_filtered() || self.codec.element_size() != 8 || rs == 0 {
            for (slot, r) in raw.chunks_exact_mut(rs.max(1)).zip(records) {
                self.encode_slot(r, slot)?;
            }
            return Ok(());
        }
        // The common ranks with the coordinates' count known at compile time: each slot is a
        // few stores, with no loop over the coordinates.
        match self.rank {
            1 => self.encode_rank::<1>(records, raw, rs),
            2 => self.encode_rank::<2>(records, raw, rs),
            3 => self.encode_rank::<3>(records, raw, rs),
            4 => self.encode_rank::<4>(records, raw, rs),
            _ => {
                for (slot, r) in raw.chunks_exact_mut(rs).zip(records) {
                    match (r.record.addr, slot.split_first_chunk_mut::<8>()) {
                        (Some(a), Some((head, coords))) if r.scaled.len() == self.rank => {
                            *head = a.get().to_le_bytes();
                            let fields = coords.as_chunks_mut::<8>().0.iter_mut();
                            for (field, &s) in fields.zip(&r.scaled) {
                                *field = s.to_le_bytes();
                            }
                        }
                        // The checks and their message are `encode_slot`'s.
                        _ => self.encode_slot(r, slot)?,
                    }
                }
                Ok(())
            }
        }
    }

    #[inline]
    fn key<'r>(&self, r: &'r ChunkEntry) -> &'r [u64] {
        &r.scaled
    }

    #[inline]
    fn compare(&self, key: &[u64], r: &ChunkEntry) -> Ordering {
        key.cmp(&r.scaled[..])
    }

    /// Chunk records order by their scaled coordinates: `rank` integers a record.
    fn flatten(&self, records: &[ChunkEntry]) -> Option<Box<[u64]>> {
        let rank = records.first().map_or(0, |r| r.scaled.len());
        if records.iter().any(|r| r.scaled.len() != rank) {
            return None;
        }
        let mut flat = Vec::with_capacity(records.len().checked_mul(rank)?);
        for r in records {
            flat.extend_from_slice(&r.scaled);
        }
        Some(flat.into_boxed_slice())
    }

    #[inline]
    fn flat_key<'k>(&self, key: &'k [u64]) -> Option<&'k [u64]> {
        Some(key)
    }
}
