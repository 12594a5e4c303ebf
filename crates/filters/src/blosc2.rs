//! The Blosc2 filter (32026, hdf5-blosc2 as hdf5plugin and PyTables ship it), read only.
//!
//! Each HDF5 chunk is a Blosc2 contiguous frame (cframe) holding one super-chunk: for chunks of
//! one dimension (client data: revision, block size, type size, chunk bytes, level, filter,
//! codec) its first Blosc2 chunk is the HDF5 chunk; with a chunk rank of 2 or more (client data
//! 7 and on: rank, chunk dimensions) the frame carries a `b2nd` metalayer (shape, chunk shape,
//! block shape) and its one Blosc2 chunk stores the HDF5 chunk as n-dimensional blocks, each in
//! C order, the chunk padded to a whole number of blocks.
//!
//! The frame (msgpack integers big-endian, everything else little-endian): a header of fixed
//! fields (bytes 0x0B.. header length, 0x10.. frame length, 0x19 flags, 0x1A frame type,
//! 0x1E.. uncompressed and 0x27.. compressed size of the chunks, 0x30.. type size, 0x3A.. chunk
//! size), then the metalayers (a msgpack map of name to offset, each value a msgpack bin32);
//! the chunks, starting at the header length; the chunk index, right after them: a Blosc2 chunk
//! of one 64-bit offset per chunk (from the header's end; an offset whose top bit is set is a
//! chunk of special values: 1 zeros, 2 NaNs, 4 uninitialised); then a trailer.
//!
//! A Blosc2 chunk: the Blosc 1 header (16 bytes: version, codec version, flags, type size,
//! uncompressed bytes, block size, compressed bytes) extended (flags 0x01 and 0x04 both set) by
//! 16: six filter slots, user codec, codec metadata, six filter metadata bytes, flags2 (0x01
//! variable-length blocks), flags (0x01 dictionary, 0x08 lazy, bits 4-6 special chunk: 1 zeros,
//! 2 NaN, 3 one repeated value stored after the header, 4 uninitialised). Flags 0x02 means
//! the blocks are stored raw after the header; else block offsets, then per block one stream
//! (flag 0x10, or the last, partial, block) or one per byte of the type: a 32-bit size then the
//! data; size 0 is a stream of zeros, a negative size with a token byte of bit 0 a run of the
//! byte `-size`, size equal to the stream's length raw bytes. The filters are undone in
//! reverse slot order: 1 byte shuffle (metadata: bytes grouped, else the type size), 2 bit
//! shuffle (format version 2 transposes a block only when it holds a multiple of 8 elements,
//! later versions the largest multiple of 8, the rest as is), 3 delta (words XORed with the
//! previous word in the first block, with the first block's word elsewhere), 4 precision
//! truncation (nothing to undo).

use super::blosc::Codec;
use super::{FilterError, bitshuffle, blosc, shuffle};

const MAGIC: &[u8; 8] = b"b2frame\0";
const HEADER: usize = 16;
const EXTENDED: usize = 32;
const MAX_FILTERS: usize = 6;

fn corrupt(reason: impl Into<String>) -> FilterError {
    FilterError::Corrupt {
        filter: "blosc2",
        reason: reason.into(),
    }
}

fn unsupported(what: &'static str) -> FilterError {
    FilterError::Unsupported {
        filter: "blosc2",
        what,
    }
}

/// Errors of the codecs Blosc and Blosc2 share, renamed.
fn rename(e: FilterError) -> FilterError {
    match e {
        FilterError::Corrupt { reason, .. } => corrupt(reason),
        other => other,
    }
}

fn bytes_at<const N: usize>(data: &[u8], at: usize) -> Result<[u8; N], FilterError> {
    data.get(at..)
        .and_then(|s| s.first_chunk::<N>())
        .copied()
        .ok_or_else(|| corrupt("truncated frame"))
}

fn be32(data: &[u8], at: usize) -> Result<usize, FilterError> {
    usize::try_from(u32::from_be_bytes(bytes_at(data, at)?)).map_err(|_| corrupt("size"))
}

fn be64(data: &[u8], at: usize) -> Result<usize, FilterError> {
    usize::try_from(u64::from_be_bytes(bytes_at(data, at)?))
        .map_err(|_| corrupt("size past the address space"))
}

fn le32(data: &[u8], at: usize) -> Result<i32, FilterError> {
    Ok(i32::from_le_bytes(bytes_at(data, at)?))
}

fn le32_size(data: &[u8], at: usize) -> Result<usize, FilterError> {
    usize::try_from(le32(data, at)?).map_err(|_| corrupt("negative size"))
}

/// Per-thread buffers a chunk decodes through, kept from one chunk to the next: a block's
/// streams and a filter's output, and a b2nd chunk's blocks (fresh buffers each chunk cost a
/// zero fill, and the allocator's trimming made their pages fault in again for every chunk).
#[derive(Default)]
struct Scratch {
    streams: Vec<u8>,
    filtered: Vec<u8>,
    blocks: Vec<u8>,
}

thread_local! {
    static SCRATCH: std::cell::Cell<Scratch> = const {
        std::cell::Cell::new(Scratch {
            streams: Vec::new(),
            filtered: Vec::new(),
            blocks: Vec::new(),
        })
    };
}

/// A buffer kept longer than this goes back to the allocator.
const KEEP: usize = 64 << 20;

fn with_scratch<R>(f: impl FnOnce(&mut Scratch) -> R) -> R {
    let mut s = SCRATCH.take();
    let r = f(&mut s);
    for v in [&mut s.streams, &mut s.filtered, &mut s.blocks] {
        if v.capacity() > KEEP {
            *v = Vec::new();
        }
    }
    SCRATCH.set(s);
    r
}

/// The first `len` bytes of `v`, grown (fallibly, zeroed) when it is shorter.
fn sized(v: &mut Vec<u8>, len: usize) -> Result<&mut [u8], FilterError> {
    if v.len() < len {
        crate::reserve(v, "blosc2", len.saturating_sub(v.len()))?;
        v.resize(len, 0);
    }
    Ok(v.get_mut(..len).unwrap_or_default())
}

/// Undo the filter, refusing a frame that declares more than `limit` bytes.
pub fn decompress(data: &[u8], limit: usize) -> Result<Vec<u8>, FilterError> {
    with_scratch(|s| decompress_to(data, limit, &mut [], s)).map(Option::unwrap_or_default)
}

/// [`decompress`] into `out`, which the chunk must fill exactly.
pub fn decompress_into(data: &[u8], limit: usize, out: &mut [u8]) -> Result<(), FilterError> {
    let decoded = with_scratch(|s| decompress_to(data, limit, out, s))?;
    crate::blosc::into_place(decoded, out, corrupt)
}

/// Undo the filter: into `dest` when the frame declares exactly its length (`None`), else into
/// a new buffer (`Some`).
fn decompress_to(
    data: &[u8],
    limit: usize,
    dest: &mut [u8],
    s: &mut Scratch,
) -> Result<Option<Vec<u8>>, FilterError> {
    if data.get(2..10) != Some(&MAGIC[..]) {
        // Not a frame: a bare Blosc2 (or Blosc 1) chunk.
        return decode_chunk_to(data, limit, dest, None, s);
    }
    let header_len = be32(data, 0x0B)?;
    let frame_len = be64(data, 0x10)?;
    if frame_len > data.len() || header_len > frame_len {
        return Err(corrupt(format!(
            "frame of {frame_len} bytes (header {header_len}) in a chunk of {}",
            data.len()
        )));
    }
    let data = data.get(..frame_len).unwrap_or_default();
    let flags = bytes_at::<1>(data, 0x19)?[0];
    let frame_type = bytes_at::<1>(data, 0x1A)?[0];
    if frame_type & 0x0F != 0 {
        return Err(unsupported("sparse frames"));
    }
    if flags & 0x80 != 0 {
        return Err(unsupported("variable-length blocks"));
    }
    if (flags >> 4) & 0x03 != 1 {
        return Err(unsupported("chunk offsets other than 64-bit"));
    }
    let uncompressed = be64(data, 0x1E)?;
    let compressed = be64(data, 0x27)?;
    let typesize = be32(data, 0x30)?;
    let chunk_size = be32(data, 0x3A)?;
    // b2nd chunks are padded to whole blocks, which makes them up to twice as long in each
    // dimension (checked against the metalayer below; more than 16 times is refused).
    let padded_limit = limit.saturating_mul(16);
    if uncompressed > padded_limit {
        return Err(corrupt(format!(
            "declares {uncompressed} bytes, more than the chunk's {limit}"
        )));
    }
    let nchunks = uncompressed.div_ceil(chunk_size.max(1));
    // hdf5-blosc2 writes one chunk per frame; more than a few thousand is a corrupt header
    // (and would size the index's decoding).
    if nchunks > 4096 {
        return Err(unsupported("frames of more than 4096 chunks"));
    }
    let index_at = header_len
        .checked_add(compressed)
        .filter(|&i| i < data.len())
        .ok_or_else(|| corrupt("chunk index past the end of the frame"))?;
    // One offset of 8 bytes per chunk: bounded by the frame's declared size, checked above.
    let index = decode_chunk_to(
        data.get(index_at..).unwrap_or_default(),
        nchunks.saturating_mul(8),
        &mut [],
        None,
        s,
    )?
    .unwrap_or_default();
    let offsets: Vec<u64> = index
        .chunks_exact(8)
        .map(|b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
        .collect();
    let b2nd = metalayer(data, header_len, "b2nd")?;
    let chunk = |i: usize,
                 limit: usize,
                 dest: &mut [u8],
                 place: Option<&NdLayout>,
                 s: &mut Scratch|
     -> Result<Option<Vec<u8>>, FilterError> {
        let &offset = offsets
            .get(i)
            .ok_or_else(|| corrupt("chunk missing from the index"))?;
        if offset >> 63 != 0 {
            let size = chunk_size.min(uncompressed.saturating_sub(i.saturating_mul(chunk_size)));
            return special(((offset >> 56) & 0x07) as u8, size, typesize).map(Some);
        }
        let at = usize::try_from(offset)
            .ok()
            .and_then(|o| o.checked_add(header_len))
            .filter(|&a| a < index_at)
            .ok_or_else(|| corrupt("chunk offset past the chunks"))?;
        decode_chunk_to(
            data.get(at..index_at).unwrap_or_default(),
            limit,
            dest,
            place,
            s,
        )
    };
    match b2nd {
        None if uncompressed > limit => Err(corrupt(format!(
            "declares {uncompressed} bytes, more than the chunk's {limit}"
        ))),
        None => chunk(0, limit, dest, None, s),
        Some(meta) => {
            let nd = NdLayout::parse(meta)?;
            if nchunks != 1 || nd.shape != nd.chunk {
                return Err(unsupported("b2nd arrays of more than one chunk"));
            }
            let padded = nd.padded_bytes(typesize)?;
            let (want, _) = nd.bytes(typesize)?;
            if want > limit {
                return Err(corrupt(format!(
                    "declares {want} bytes, more than the chunk's {limit}"
                )));
            }
            // Blocks no larger than the chunk pad each dimension to less than twice its
            // length: a larger padded size is a corrupt metalayer.
            let bound = want.saturating_mul(1usize << nd.shape.len());
            if padded > bound {
                return Err(corrupt("b2nd blocks larger than the chunk"));
            }
            // hdf5-blosc2's blocks pad a chunk by far less; more would size a large buffer.
            if padded > want.saturating_mul(16) {
                return Err(unsupported(
                    "b2nd chunks padded to more than 16 times their size",
                ));
            }
            if padded == want && nd.in_c_order() {
                // The blocks are the array in C order already.
                return chunk(0, padded, dest, None, s);
            }
            if want == dest.len() {
                // Each block goes to its place in `dest` as it is decoded, while it is still
                // in cache (a chunk in the blocks' order and a pass to reorder it cost a
                // second trip through memory, which two threads share).
                match chunk(0, padded, dest, Some(&nd), s)? {
                    None => return Ok(None),
                    Some(v) if v.len() == padded => {
                        nd.unblock_into(&v, typesize, dest)?;
                        return Ok(None);
                    }
                    Some(v) => {
                        return Err(corrupt(format!(
                            "b2nd chunk of {} bytes, its blocks make {padded}",
                            v.len()
                        )));
                    }
                }
            }
            let mut blocks = std::mem::take(&mut s.blocks);
            let done = (|| {
                let b = sized(&mut blocks, padded)?;
                match chunk(0, padded, b, None, s)? {
                    None => {}
                    Some(v) if v.len() == padded => b.copy_from_slice(&v),
                    Some(v) => {
                        return Err(corrupt(format!(
                            "b2nd chunk of {} bytes, its blocks make {padded}",
                            v.len()
                        )));
                    }
                }
                if want == dest.len() {
                    nd.unblock_into(b, typesize, dest)?;
                    Ok(None)
                } else {
                    let mut v = crate::zeroed("blosc2", want)?;
                    nd.unblock_into(b, typesize, &mut v)?;
                    Ok(Some(v))
                }
            })();
            s.blocks = blocks;
            done
        }
    }
}

/// The content (a msgpack bin32) of the metalayer `name`, if the frame has it.
fn metalayer<'a>(
    data: &'a [u8],
    header_len: usize,
    name: &str,
) -> Result<Option<&'a [u8]>, FilterError> {
    // 0x57: fixarray of 3, uint16 (0xcd) index, map16 (0xde) of name -> int32 offset.
    let header = data.get(..header_len).unwrap_or_default();
    let Ok([0x93, 0xcd, _, _, 0xde, n0, n1]) = bytes_at::<7>(header, 0x57) else {
        return Ok(None);
    };
    let mut at = 0x57usize.saturating_add(7);
    for _ in 0..u16::from_be_bytes([n0, n1]) {
        let [tag] = bytes_at::<1>(header, at)?;
        if tag & 0xE0 != 0xA0 {
            return Err(corrupt("metalayer name is not a short string"));
        }
        let len = usize::from(tag & 0x1F);
        let key = header
            .get(at.saturating_add(1)..at.saturating_add(1).saturating_add(len))
            .ok_or_else(|| corrupt("truncated metalayer name"))?;
        at = at.saturating_add(1).saturating_add(len);
        let [tag, o @ ..] = bytes_at::<5>(header, at)?;
        if tag != 0xd2 {
            return Err(corrupt("metalayer offset is not an int32"));
        }
        at = at.saturating_add(5);
        if key == name.as_bytes() {
            let offset = usize::try_from(i32::from_be_bytes(o)).map_err(|_| corrupt("offset"))?;
            let [tag, l @ ..] = bytes_at::<5>(header, offset)?;
            if tag != 0xc6 {
                return Err(corrupt("metalayer content is not a bin32"));
            }
            let len = usize::try_from(u32::from_be_bytes(l)).map_err(|_| corrupt("size"))?;
            let start = offset.saturating_add(5);
            return header
                .get(start..start.saturating_add(len))
                .map(Some)
                .ok_or_else(|| corrupt("metalayer past the header"));
        }
    }
    Ok(None)
}

/// A b2nd array's shape, chunk shape and block shape.
struct NdLayout {
    shape: Vec<usize>,
    chunk: Vec<usize>,
    block: Vec<usize>,
}

/// msgpack integers as the b2nd metalayer stores them.
fn mp_int(m: &[u8], at: &mut usize) -> Result<i64, FilterError> {
    let [tag] = bytes_at::<1>(m, *at)?;
    *at = at.saturating_add(1);
    let v = match tag {
        0x00..=0x7f => i64::from(tag),
        0xd2 => {
            let v = i64::from(i32::from_be_bytes(bytes_at(m, *at)?));
            *at = at.saturating_add(4);
            v
        }
        0xd3 => {
            let v = i64::from_be_bytes(bytes_at(m, *at)?);
            *at = at.saturating_add(8);
            v
        }
        _ => return Err(corrupt("b2nd metalayer: unexpected integer encoding")),
    };
    Ok(v)
}

impl NdLayout {
    fn parse(m: &[u8]) -> Result<NdLayout, FilterError> {
        let bad = || corrupt("b2nd metalayer");
        let mut at = 0usize;
        let [array] = bytes_at::<1>(m, at)?;
        if array & 0xF0 != 0x90 {
            return Err(bad());
        }
        at = 1;
        let _version = mp_int(m, &mut at)?;
        let nd = usize::try_from(mp_int(m, &mut at)?).map_err(|_| bad())?;
        if nd == 0 || nd > 8 {
            return Err(unsupported("b2nd arrays of rank 0 or above 8"));
        }
        let mut dims = || -> Result<Vec<usize>, FilterError> {
            let [tag] = bytes_at::<1>(m, at)?;
            at = at.saturating_add(1);
            if usize::from(tag ^ 0x90) != nd {
                return Err(bad());
            }
            (0..nd)
                .map(|_| {
                    usize::try_from(mp_int(m, &mut at)?)
                        .ok()
                        .filter(|&d| d > 0)
                        .ok_or_else(bad)
                })
                .collect()
        };
        let shape = dims()?;
        let chunk = dims()?;
        let block = dims()?;
        if block.iter().zip(&chunk).any(|(b, c)| b > c) {
            return Err(bad());
        }
        Ok(NdLayout {
            shape,
            chunk,
            block,
        })
    }

    /// Bytes of the array (and its element count).
    fn bytes(&self, typesize: usize) -> Result<(usize, usize), FilterError> {
        let n = self
            .shape
            .iter()
            .try_fold(1usize, |a, &d| a.checked_mul(d))
            .ok_or_else(|| corrupt("b2nd shape too large"))?;
        Ok((
            n.checked_mul(typesize)
                .ok_or_else(|| corrupt("b2nd shape too large"))?,
            n,
        ))
    }

    /// Bytes of the chunk padded to whole blocks.
    fn padded_bytes(&self, typesize: usize) -> Result<usize, FilterError> {
        self.chunk
            .iter()
            .zip(&self.block)
            .try_fold(typesize, |a, (&c, &b)| {
                a.checked_mul(c.div_ceil(b).checked_mul(b)?)
            })
            .ok_or_else(|| corrupt("b2nd chunk too large"))
    }

    /// Whether the blocks, in C order, are the chunk in C order: every dimension before
    /// the first that a block does not take whole is one element deep in the block.
    fn in_c_order(&self) -> bool {
        // The innermost dimension a block cuts.
        let split = self
            .block
            .iter()
            .zip(&self.chunk)
            .rposition(|(b, c)| b != c)
            .unwrap_or(0);
        self.block.iter().take(split).all(|&b| b == 1)
    }

    /// Block `j` (in the chunk's C order of blocks, `block` its padded bytes) to its place in
    /// `out` (the array in C order, the chunk being the whole array); padding is dropped.
    fn place_block(
        &self,
        j: usize,
        block: &[u8],
        ts: usize,
        out: &mut [u8],
    ) -> Result<(), FilterError> {
        let bad = || corrupt("b2nd block past the array");
        let nd = self.shape.len();
        // The block's first element in the array, per dimension.
        let mut origin = [0usize; 8];
        let mut rest = j;
        for d in (0..nd).rev() {
            let (c, b) = (
                self.chunk.get(d).copied().unwrap_or(1),
                self.block.get(d).copied().unwrap_or(1),
            );
            let g = c.div_ceil(b.max(1)).max(1);
            if let Some(o) = origin.get_mut(d) {
                *o = rest.checked_rem(g).unwrap_or(0).saturating_mul(b);
            }
            rest = rest.checked_div(g).unwrap_or(0);
        }
        if rest != 0 {
            return Err(bad());
        }
        let last = nd.saturating_sub(1);
        let (last_block, last_shape) = (
            self.block.get(last).copied().unwrap_or(1),
            self.shape.get(last).copied().unwrap_or(1),
        );
        let x0 = origin.get(last).copied().unwrap_or(0);
        let run = last_block.min(last_shape.saturating_sub(x0));
        let (row_bytes, run_bytes) = (last_block.saturating_mul(ts), run.saturating_mul(ts));
        // One row of the block along the last dimension at a time.
        for (r, src) in block.chunks_exact(row_bytes.max(1)).enumerate() {
            let mut rr = r;
            let mut at = 0usize;
            let mut stride = last_shape;
            let mut inside = run > 0;
            for d in (0..last).rev() {
                let (b, n) = (
                    self.block.get(d).copied().unwrap_or(1),
                    self.shape.get(d).copied().unwrap_or(1),
                );
                let i = origin
                    .get(d)
                    .copied()
                    .unwrap_or(0)
                    .saturating_add(rr.checked_rem(b).unwrap_or(0));
                rr = rr.checked_div(b).unwrap_or(0);
                inside &= i < n;
                at = at.saturating_add(i.saturating_mul(stride));
                stride = stride.saturating_mul(n);
            }
            if !inside {
                continue;
            }
            let to = at.saturating_add(x0).saturating_mul(ts);
            out.get_mut(to..to.saturating_add(run_bytes))
                .ok_or_else(bad)?
                .copy_from_slice(src.get(..run_bytes).ok_or_else(bad)?);
        }
        Ok(())
    }

    /// The array in C order from the chunk's blocks, into `out` (exactly the array's bytes).
    fn unblock_into(&self, blocks: &[u8], ts: usize, out: &mut [u8]) -> Result<(), FilterError> {
        let (bytes, n) = self.bytes(ts)?;
        if out.len() != bytes {
            return Err(corrupt("b2nd array of another size than the chunk"));
        }
        let nd = self.shape.len();
        let grid: Vec<usize> = self
            .chunk
            .iter()
            .zip(&self.block)
            .map(|(&c, &b)| c.div_ceil(b))
            .collect();
        let block_items: usize = self.block.iter().product();
        let last_shape = self.shape.last().copied().unwrap_or(1);
        let last_block = self.block.last().copied().unwrap_or(1);
        let mut index = vec![0usize; nd];
        let mut done = 0usize;
        while done < n {
            // The run along the last dimension within one block.
            let x = index.last().copied().unwrap_or(0);
            let run = (last_block.saturating_sub(x.checked_rem(last_block).unwrap_or(0)))
                .min(last_shape.saturating_sub(x));
            let (mut g, mut w) = (0usize, 0usize);
            for d in 0..nd {
                let (i, b, gd) = (
                    index.get(d).copied().unwrap_or(0),
                    self.block.get(d).copied().unwrap_or(1),
                    grid.get(d).copied().unwrap_or(1),
                );
                g = g
                    .saturating_mul(gd)
                    .saturating_add(i.checked_div(b).unwrap_or(0));
                w = w
                    .saturating_mul(b)
                    .saturating_add(i.checked_rem(b).unwrap_or(0));
            }
            let at = g
                .saturating_mul(block_items)
                .saturating_add(w)
                .saturating_mul(ts);
            let len = run.saturating_mul(ts);
            let src = blocks
                .get(at..at.saturating_add(len))
                .ok_or_else(|| corrupt("b2nd block past the chunk"))?;
            let to = done.saturating_mul(ts);
            out.get_mut(to..to.saturating_add(len))
                .ok_or_else(|| corrupt("b2nd run past the array"))?
                .copy_from_slice(src);
            done = done.saturating_add(run.max(1));
            // Advance the index by `run` along the last dimension, carrying.
            if let Some(l) = index.last_mut() {
                *l = l.saturating_add(run.max(1));
            }
            for d in (1..nd).rev() {
                let s = self.shape.get(d).copied().unwrap_or(1);
                if index.get(d).copied().unwrap_or(0) >= s {
                    if let Some(i) = index.get_mut(d) {
                        *i = 0;
                    }
                    if let Some(i) = index.get_mut(d.saturating_sub(1)) {
                        *i = i.saturating_add(1);
                    }
                }
            }
        }
        Ok(())
    }
}

/// A chunk of special values.
fn special(kind: u8, size: usize, typesize: usize) -> Result<Vec<u8>, FilterError> {
    match kind {
        // Zeros; uninitialised values, which c-blosc2 leaves as the buffer was: zeros here.
        1 | 4 => Ok(vec![0; size]),
        2 => {
            let nan: &[u8] = match typesize {
                4 => &[0x00, 0x00, 0xC0, 0x7F],
                8 => &[0, 0, 0, 0, 0, 0, 0xF8, 0x7F],
                _ => return Err(corrupt("NaN chunk of a type that is not a float")),
            };
            Ok(nan.iter().copied().cycle().take(size).collect())
        }
        _ => Err(corrupt(format!("special chunk kind {kind}"))),
    }
}

/// Decode one Blosc2 chunk (or Blosc 1 buffer) of at most `limit` bytes: into `dest` when it
/// declares exactly `dest`'s length (`None`), else into a new buffer (`Some`). With `place`
/// (a b2nd chunk of exactly `limit` padded bytes, `dest` its array), each block goes to its
/// place in `dest` (`None`) when the blocks are the metalayer's, else the blocks come back in
/// a new buffer (`Some`) for the caller to reorder.
fn decode_chunk_to(
    data: &[u8],
    limit: usize,
    dest: &mut [u8],
    place: Option<&NdLayout>,
    s: &mut Scratch,
) -> Result<Option<Vec<u8>>, FilterError> {
    let h = bytes_at::<HEADER>(data, 0)?;
    let [version, _, flags, typesize, ..] = h;
    if flags & 0x05 != 0x05 {
        // The Blosc 1 header only.
        if place.is_some() {
            return blosc::decompress_to(data, limit, &mut [])
                .map(|v| Some(v.unwrap_or_default()))
                .map_err(rename);
        }
        return blosc::decompress_to(data, limit, dest).map_err(rename);
    }
    let nbytes = le32_size(data, 4)?;
    let blocksize = le32_size(data, 8)?;
    let cbytes = le32_size(data, 12)?;
    if nbytes > limit {
        return Err(corrupt(format!(
            "declares {nbytes} bytes, more than the chunk's {limit}"
        )));
    }
    let data = data
        .get(..cbytes)
        .filter(|_| cbytes >= EXTENDED)
        .ok_or_else(|| corrupt(format!("declares {cbytes} bytes, the chunk holds fewer")))?;
    let x = bytes_at::<EXTENDED>(data, 0)?;
    let (filters, meta) = (
        x.get(16..22).unwrap_or_default(),
        x.get(24..30).unwrap_or_default(),
    );
    let (flags2, b2flags) = (x[30], x[31]);
    let typesize = usize::from(typesize);
    if typesize == 0 {
        return Err(corrupt("type size 0"));
    }
    match (b2flags >> 4) & 0x07 {
        0 => {}
        3 => {
            // One value, stored after the header, repeated.
            let value = data.get(EXTENDED..).unwrap_or_default();
            if value.is_empty() || !nbytes.is_multiple_of(value.len()) {
                return Err(corrupt("repeated-value chunk"));
            }
            return Ok(Some(value.iter().copied().cycle().take(nbytes).collect()));
        }
        kind => return special(kind, nbytes, typesize).map(Some),
    }
    if flags2 & 0x01 != 0 {
        return Err(unsupported("variable-length blocks"));
    }
    if b2flags & 0x01 != 0 {
        return Err(unsupported("dictionaries"));
    }
    if b2flags & 0x08 != 0 {
        return Err(corrupt("lazy chunk stored"));
    }
    if flags & 0x02 != 0 {
        // Stored raw.
        let raw = data
            .get(EXTENDED..EXTENDED.saturating_add(nbytes))
            .ok_or_else(|| corrupt("truncated raw chunk"))?;
        if place.is_none() && raw.len() == dest.len() {
            dest.copy_from_slice(raw);
            return Ok(None);
        }
        return Ok(Some(raw.to_vec()));
    }
    let codec = match flags >> 5 {
        0 => Codec::BloscLz,
        1 => Codec::Lz4,
        3 => Codec::Zlib,
        4 => Codec::Zstd,
        // Plugins registered with c-blosc2 (ZFP, OpenHTJ2K, Grok, ...), by `udcodec`.
        6 => {
            return Err(unsupported(
                "user-defined codecs (ZFP, OpenHTJ2K, Grok and others)",
            ));
        }
        _ => return Err(unsupported("codecs other than BloscLZ, LZ4, zlib and Zstd")),
    };
    for &f in filters {
        if f > 4 {
            return Err(unsupported("user-defined filters"));
        }
    }
    if blocksize == 0 && nbytes != 0 {
        return Err(corrupt("block size 0"));
    }
    let nblocks = nbytes.div_ceil(blocksize.max(1));
    if nblocks.saturating_mul(4) > data.len().saturating_sub(EXTENDED) {
        return Err(corrupt("block offsets past the end of the chunk"));
    }
    let layout = Blocks {
        data,
        version,
        typesize,
        nbytes,
        blocksize,
        nblocks,
        dont_split: flags & 0x10 != 0,
        codec,
        filters,
        meta,
    };
    if let Some(nd) = place {
        let block_bytes = nd
            .block
            .iter()
            .try_fold(layout.typesize, |a, &b| a.checked_mul(b));
        let delta = filters.contains(&3);
        if nbytes == limit && block_bytes == Some(blocksize) && !delta {
            let mut block = std::mem::take(&mut s.blocks);
            let done = layout.decode_placed(nd, dest, &mut block, s);
            s.blocks = block;
            done?;
            return Ok(None);
        }
        let mut out = crate::zeroed("blosc2", nbytes)?;
        layout.decode(&mut out, s)?;
        return Ok(Some(out));
    }
    if nbytes == dest.len() {
        layout.decode(dest, s)?;
        Ok(None)
    } else {
        let mut out = crate::zeroed("blosc2", nbytes)?;
        layout.decode(&mut out, s)?;
        Ok(Some(out))
    }
}

/// A Blosc2 chunk's blocks, as its header describes them.
struct Blocks<'a> {
    data: &'a [u8],
    version: u8,
    typesize: usize,
    nbytes: usize,
    blocksize: usize,
    nblocks: usize,
    dont_split: bool,
    codec: Codec,
    filters: &'a [u8],
    meta: &'a [u8],
}

impl Blocks<'_> {
    /// Decode every block into `out` (`nbytes` long): a block's streams go straight there
    /// when no filter follows, else through the scratch buffers, the filter undone last
    /// writing into `out`.
    fn decode(&self, out: &mut [u8], s: &mut Scratch) -> Result<(), FilterError> {
        let (mut cur, mut other) = (
            std::mem::take(&mut s.streams),
            std::mem::take(&mut s.filtered),
        );
        let done = self.decode_with(out, &mut cur, &mut other);
        (s.streams, s.filtered) = (cur, other);
        done
    }

    /// Decode every block of a b2nd chunk whose blocks are `nd`'s, each into `block` and
    /// from there to its place in `out` (the array in C order).
    fn decode_placed(
        &self,
        nd: &NdLayout,
        out: &mut [u8],
        block: &mut Vec<u8>,
        s: &mut Scratch,
    ) -> Result<(), FilterError> {
        let (mut cur, mut other) = (
            std::mem::take(&mut s.streams),
            std::mem::take(&mut s.filtered),
        );
        let done = (|| {
            for j in 0..self.nblocks {
                let bsize = self
                    .blocksize
                    .min(self.nbytes.saturating_sub(j.saturating_mul(self.blocksize)));
                let dst = sized(block, bsize)?;
                self.block_into(j, dst, None, &mut cur, &mut other)?;
                nd.place_block(j, dst, self.typesize, out)?;
            }
            Ok(())
        })();
        (s.streams, s.filtered) = (cur, other);
        done
    }

    fn decode_with(
        &self,
        out: &mut [u8],
        cur: &mut Vec<u8>,
        other: &mut Vec<u8>,
    ) -> Result<(), FilterError> {
        for j in 0..self.nblocks {
            let done = j.saturating_mul(self.blocksize);
            let bsize = self.blocksize.min(self.nbytes.saturating_sub(done));
            let (head, rest) = out.split_at_mut(done.min(out.len()));
            let dst = rest
                .get_mut(..bsize)
                .ok_or_else(|| corrupt("block past the chunk"))?;
            self.block_into(j, dst, head.get(..bsize), cur, other)?;
        }
        Ok(())
    }

    /// Decode block `j` into `dst` (its length); `first` is the first block's decoded bytes
    /// (for the delta filter), when `j` is not 0.
    fn block_into(
        &self,
        j: usize,
        dst: &mut [u8],
        first: Option<&[u8]>,
        cur: &mut Vec<u8>,
        other: &mut Vec<u8>,
    ) -> Result<(), FilterError> {
        let (data, typesize, blocksize) = (self.data, self.typesize, self.blocksize);
        // The filter undone last (the lowest slot that has one).
        let last_filter = self
            .filters
            .iter()
            .take(MAX_FILTERS)
            .position(|&f| f != 0 && f != 4)
            .unwrap_or(MAX_FILTERS);
        {
            let start = le32_size(data, EXTENDED.saturating_add(j.saturating_mul(4)))?;
            let bsize = dst.len();
            let leftover = bsize < blocksize;
            let nstreams = if !self.dont_split && !leftover {
                typesize
            } else {
                1
            };
            let neblock = bsize.checked_div(nstreams).unwrap_or(0);
            if neblock.saturating_mul(nstreams) != bsize || neblock == 0 {
                return Err(corrupt("block does not split into its streams"));
            }
            if last_filter == MAX_FILTERS {
                return self.streams(start, nstreams, neblock, dst);
            }
            self.streams(start, nstreams, neblock, sized(cur, bsize)?)?;
            // The filters, last slot first; the one undone last writes straight into `dst`.
            let mut written = false;
            for (i, &f) in self.filters.iter().enumerate().take(MAX_FILTERS).rev() {
                let to_out = i == last_filter;
                match f {
                    1 => {
                        let group = match self.meta.get(i).copied().unwrap_or(0) {
                            0 => typesize,
                            m => usize::from(m),
                        };
                        let src = cur.get(..bsize).unwrap_or_default();
                        if to_out {
                            shuffle::unshuffle_into(src, group, dst);
                            written = true;
                        } else {
                            shuffle::unshuffle_into(src, group, sized(other, bsize)?);
                            std::mem::swap(cur, other);
                        }
                    }
                    2 => {
                        let elements = bsize.checked_div(typesize).unwrap_or(0);
                        let whole = if self.version <= 2 {
                            if elements % 8 == 0 { elements } else { 0 }
                        } else {
                            elements & !7
                        };
                        let body = whole.saturating_mul(typesize).min(bsize);
                        let src = cur.get(..bsize).unwrap_or_default();
                        let to: &mut [u8] = if to_out {
                            written = true;
                            &mut *dst
                        } else {
                            sized(other, bsize)?
                        };
                        let (d_body, d_tail) = to.split_at_mut(body.min(to.len()));
                        let (t_body, t_tail) = src.split_at(body.min(src.len()));
                        bitshuffle::untranspose_block(t_body, typesize, d_body);
                        if d_tail.len() == t_tail.len() {
                            d_tail.copy_from_slice(t_tail);
                        }
                        if !to_out {
                            std::mem::swap(cur, other);
                        }
                    }
                    3 => undelta(
                        cur.get_mut(..bsize).unwrap_or_default(),
                        first,
                        typesize,
                        j == 0,
                    )?,
                    _ => {}
                }
            }
            if !written {
                dst.copy_from_slice(cur.get(..bsize).unwrap_or_default());
            }
        }
        Ok(())
    }

    /// Decode the `nstreams` streams of the block at `at` into `to` (`neblock` bytes each).
    fn streams(
        &self,
        mut at: usize,
        nstreams: usize,
        neblock: usize,
        to: &mut [u8],
    ) -> Result<(), FilterError> {
        let data = self.data;
        for piece in to.chunks_exact_mut(neblock).take(nstreams) {
            let csize = le32(data, at)?;
            at = at.saturating_add(4);
            if csize == 0 {
                piece.fill(0);
            } else if csize < 0 {
                let [token] = bytes_at::<1>(data, at)?;
                at = at.saturating_add(1);
                if token & 0x01 == 0 || csize < -255 {
                    return Err(corrupt("unknown stream token"));
                }
                piece.fill(u8::try_from(csize.unsigned_abs()).unwrap_or(0));
            } else {
                let csize = csize.unsigned_abs() as usize;
                let src = data
                    .get(at..at.saturating_add(csize))
                    .ok_or_else(|| corrupt("stream past the end of the chunk"))?;
                at = at.saturating_add(csize);
                if csize == neblock {
                    piece.copy_from_slice(src);
                } else {
                    self.codec.decode_into(src, piece).map_err(rename)?;
                }
            }
        }
        Ok(())
    }
}

/// Undo Blosc2's delta filter on one block: in the first block each word is XORed with the
/// previous (decoded) one, elsewhere with the first block's word at the same place.
fn undelta(
    block: &mut [u8],
    first: Option<&[u8]>,
    typesize: usize,
    is_first: bool,
) -> Result<(), FilterError> {
    let w = match typesize {
        1 | 2 | 4 | 8 => typesize,
        t if t % 8 == 0 => 8,
        _ => 1,
    };
    let words = block.len().checked_div(w).unwrap_or(0);
    let body = words.saturating_mul(w);
    if is_first {
        for i in w..body {
            let prev = block.get(i.saturating_sub(w)).copied().unwrap_or(0);
            if let Some(b) = block.get_mut(i) {
                *b ^= prev;
            }
        }
    } else {
        let first = first.ok_or_else(|| corrupt("delta block larger than the first"))?;
        for (b, r) in block.iter_mut().zip(first).take(body) {
            *b ^= r;
        }
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::arithmetic_side_effects)]
mod tests {
    use super::*;

    #[test]
    fn delta_undoes_both_block_kinds() {
        // First block words 1, 2, 3 encoded as 1, 1^2, 2^3.
        let mut b = vec![1u8, 3, 1];
        undelta(&mut b, None, 1, true).unwrap();
        assert_eq!(b, [1, 2, 3]);
        let mut c = vec![1u8 ^ 5, 2 ^ 6, 3 ^ 7];
        undelta(&mut c, Some(&b), 1, false).unwrap();
        assert_eq!(c, [5, 6, 7]);
    }

    #[test]
    fn unblocks_a_padded_b2nd_chunk() {
        // A 3×3 chunk in 2×2 blocks: four blocks of 4 items, padding zero.
        let nd = NdLayout {
            shape: vec![3, 3],
            chunk: vec![3, 3],
            block: vec![2, 2],
        };
        assert_eq!(nd.padded_bytes(1).unwrap(), 16);
        let blocks = [1, 2, 4, 5, 3, 0, 6, 0, 7, 8, 0, 0, 9, 0, 0, 0];
        let mut out = [0u8; 9];
        nd.unblock_into(&blocks, 1, &mut out).unwrap();
        assert_eq!(out.to_vec(), (1..=9).collect::<Vec<u8>>());
        assert!(!nd.in_c_order());
        assert!(nd.unblock_into(&blocks, 1, &mut [0u8; 8]).is_err());
    }

    #[test]
    fn placing_each_block_matches_unblocking_the_chunk() {
        // Padded in every dimension, cut rows, 1-D to 3-D, one- and two-byte items.
        for (chunk, block, ts) in [
            (vec![3usize, 3], vec![2usize, 2], 1usize),
            (vec![5, 7, 9], vec![2, 3, 4], 2),
            (vec![1, 64, 64], vec![1, 16, 16], 2),
            (vec![4, 6, 10], vec![3, 6, 4], 1),
            (vec![13], vec![4], 2),
        ] {
            let nd = NdLayout {
                shape: chunk.clone(),
                chunk,
                block: block.clone(),
            };
            let padded = nd.padded_bytes(ts).unwrap();
            let blocks: Vec<u8> = (0..padded).map(|i| (i * 7 + i / 251) as u8).collect();
            let (want, _) = nd.bytes(ts).unwrap();
            let mut expect = vec![0u8; want];
            nd.unblock_into(&blocks, ts, &mut expect).unwrap();
            let mut got = vec![0xEEu8; want];
            let bsize = block.iter().product::<usize>() * ts;
            for (j, b) in blocks.chunks(bsize).enumerate() {
                nd.place_block(j, b, ts, &mut got).unwrap();
            }
            assert_eq!(got, expect, "{:?} in {:?} of {ts}", nd.block, nd.chunk);
            // A block index past the grid is refused, not written.
            let past = blocks.len() / bsize;
            assert!(
                nd.place_block(past, &blocks[..bsize], ts, &mut got)
                    .is_err()
            );
        }
    }

    #[test]
    fn blocks_of_whole_inner_dimensions_are_in_c_order() {
        let nd = |chunk: &[usize], block: &[usize]| NdLayout {
            shape: chunk.to_vec(),
            chunk: chunk.to_vec(),
            block: block.to_vec(),
        };
        // Rows of whole planes, whole rows of one plane, one block: C order.
        assert!(nd(&[4, 8, 16], &[2, 8, 16]).in_c_order());
        assert!(nd(&[1, 512, 1024], &[1, 32, 1024]).in_c_order());
        assert!(nd(&[4, 8, 16], &[1, 2, 16]).in_c_order());
        assert!(nd(&[4, 8], &[4, 8]).in_c_order());
        // A block that cuts a row, or holds two planes' partial rows: not.
        assert!(!nd(&[4, 8, 16], &[1, 8, 8]).in_c_order());
        assert!(!nd(&[4, 8, 16], &[2, 4, 16]).in_c_order());
        // Where the order is C's, unblocking is the identity.
        let l = nd(&[4, 8, 16], &[1, 2, 16]);
        let blocks: Vec<u8> = (0..=255).map(|i: u16| i as u8).cycle().take(512).collect();
        let mut out = vec![0u8; 512];
        l.unblock_into(&blocks, 1, &mut out).unwrap();
        assert_eq!(out, blocks);
    }

    #[test]
    fn garbage_never_panics() {
        let mut next = crate::xorshift(0x9E37_79B9_7F4A_7C15u64);
        for round in 0..3000 {
            let len = (next() % 300) as usize;
            let mut junk: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            if round % 2 == 0 && junk.len() > 40 {
                junk[2..10].copy_from_slice(MAGIC);
                junk[0x0B..0x0F].copy_from_slice(&40u32.to_be_bytes());
            }
            if round % 3 == 0 && junk.len() > 32 {
                junk[2] |= 0x05;
            }
            if let Ok(d) = decompress(&junk, 4000) {
                assert!(d.len() <= 4000);
            }
        }
    }
}
