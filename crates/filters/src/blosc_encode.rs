//! Writing Blosc (32001) buffers and Blosc2 (32026) frames: the formats [`super::blosc`] and
//! [`super::blosc2`] read, as hdf5plugin's filters write them (c-blosc 1.x buffers of format
//! version 2; c-blosc2 contiguous frames of one chunk of format version 5, without the `b2nd`
//! metalayer, which is what hdf5-blosc2 writes for chunks of one dimension and reads for any).
//!
//! The client data are those the filters' `set_local` leave in the pipeline message:
//! Blosc `[revision 2, format 2, type size, chunk bytes, level, shuffle, compressor]`, Blosc2
//! `[revision 1, block size (0: chosen), type size, chunk bytes, level, filter, compressor]`.
//! Compressors: 0 BloscLZ, 1 LZ4, 2 LZ4HC, 4 zlib, 5 Zstandard (3, Snappy, is refused). LZ4HC
//! streams are LZ4 blocks of the fast compressor (the same format), Zstandard frames are
//! libzstd-level frames (`rust-zstd`) at the Blosc level as given.

use std::io::Write as _;

use super::{FilterError, bitshuffle, lz4, shuffle, zstd};

/// Blosc 1 buffers smaller than this are stored raw by c-blosc (which the HDF5 filter, whose
/// output may not outgrow its input, cannot store: the chunk is left unfiltered).
const BLOSC1_MIN_BUFFER: usize = 128;
/// Blosc2's: chunks smaller than this are stored raw (memcpyed).
const BLOSC2_MIN_BUFFER: usize = 32;
/// The largest buffer either format frames (sizes are signed 32-bit, header included).
const MAX_BUFFER: usize = (i32::MAX as usize) - 64;
/// The base block size (c-blosc's L1), scaled by the level.
const L1: usize = 32 * 1024;
/// Blosc2's extended chunk header.
const EXTENDED: usize = 32;

/// A compressor of the Blosc filters' client data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Compressor {
    BloscLz,
    Lz4,
    Lz4Hc,
    Zlib,
    Zstd,
}

impl Compressor {
    fn from_code(filter: &'static str, code: u32) -> Result<Compressor, FilterError> {
        Ok(match code {
            0 => Compressor::BloscLz,
            1 => Compressor::Lz4,
            2 => Compressor::Lz4Hc,
            4 => Compressor::Zlib,
            5 => Compressor::Zstd,
            3 => {
                return Err(FilterError::Unsupported {
                    filter,
                    what: "writing with the Snappy codec",
                });
            }
            _ => {
                return Err(FilterError::Unsupported {
                    filter,
                    what: "writing with a compressor code above 5",
                });
            }
        })
    }

    /// The client data's code.
    fn code(self) -> u8 {
        match self {
            Compressor::BloscLz => 0,
            Compressor::Lz4 => 1,
            Compressor::Lz4Hc => 2,
            Compressor::Zlib => 4,
            Compressor::Zstd => 5,
        }
    }

    /// The codec's number in a buffer's flags (LZ4 and LZ4HC share a format).
    fn format(self) -> u8 {
        match self {
            Compressor::BloscLz => 0,
            Compressor::Lz4 | Compressor::Lz4Hc => 1,
            Compressor::Zlib => 3,
            Compressor::Zstd => 4,
        }
    }

    /// The high-ratio codecs get larger blocks.
    fn high_ratio(self) -> bool {
        matches!(
            self,
            Compressor::Lz4Hc | Compressor::Zlib | Compressor::Zstd
        )
    }

    /// One compressed stream of `src` appended to `out`.
    fn encode(self, src: &[u8], level: u8, out: &mut Vec<u8>) {
        match self {
            Compressor::BloscLz => blosclz_compress(src, out),
            Compressor::Lz4 | Compressor::Lz4Hc => lz4::compress_block(src, out),
            Compressor::Zlib => {
                let mut e = flate2::write::ZlibEncoder::new(
                    std::mem::take(out),
                    flate2::Compression::new(u32::from(level)),
                );
                // Writing into a Vec does not fail.
                let _ = e.write_all(src);
                *out = e.finish().unwrap_or_default();
            }
            Compressor::Zstd => zstd::compress_into(src, i32::from(level), out),
        }
    }
}

/// What is done to each block before it is compressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Prefilter {
    None,
    Shuffle,
    /// Bit shuffle; `all_or_nothing`: Blosc 1 transposes a block only when its element count is
    /// a multiple of 8 (Blosc2: the largest multiple of 8 elements).
    BitShuffle {
        all_or_nothing: bool,
    },
    /// Blosc2's delta: in the first block each word XORed with the previous one, elsewhere with
    /// the first block's word at the same place (words of the type size if 1, 2, 4 or 8, of 8
    /// bytes for other multiples of 8, else bytes).
    Delta,
}

/// How a buffer's blocks are made.
struct Layout {
    typesize: usize,
    blocksize: usize,
    split: bool,
    prefilter: Prefilter,
    compressor: Compressor,
    level: u8,
}

/// A block size for `nbytes`: c-blosc's choice in outline (32 KiB, scaled by the level and
/// doubled for the high-ratio codecs; larger for blocks that split), a multiple of the type
/// size, at most `nbytes`.
fn block_size(
    nbytes: usize,
    typesize: usize,
    level: u8,
    compressor: Compressor,
    splits: impl Fn(usize) -> bool,
) -> usize {
    if nbytes < typesize {
        return nbytes.max(1);
    }
    let mut b = nbytes;
    if nbytes >= L1 {
        let base = if compressor.high_ratio() { 2 * L1 } else { L1 };
        b = match level {
            0 => base / 4,
            1 => base / 2,
            2 => base,
            3 => base.saturating_mul(2),
            4 | 5 => base.saturating_mul(4),
            6..=8 => base.saturating_mul(8),
            _ => base.saturating_mul(if compressor.high_ratio() { 16 } else { 8 }),
        };
    }
    if level > 0 && splits(b) {
        b = b
            .min(1 << 18)
            .saturating_mul(typesize)
            .clamp(1 << 16, 1 << 20);
    }
    b = b.min(nbytes);
    if b > typesize {
        b = b
            .checked_div(typesize)
            .unwrap_or(b)
            .saturating_mul(typesize);
    }
    b.max(1)
}

fn put32(out: &mut [u8], at: usize, v: u32) {
    if let Some(d) = out.get_mut(at..at.saturating_add(4)) {
        d.copy_from_slice(&v.to_le_bytes());
    }
}

/// The block starts and streams of `data` appended to `out` (which holds the buffer's header:
/// offsets count from its start). False when the buffer would grow past `max` bytes.
fn encode_blocks(data: &[u8], l: &Layout, out: &mut Vec<u8>, max: usize) -> bool {
    let nblocks = data.len().div_ceil(l.blocksize);
    let starts = out.len();
    out.resize(starts.saturating_add(nblocks.saturating_mul(4)), 0);
    let mut filtered = vec![0u8; l.blocksize.min(data.len())];
    for (j, block) in data.chunks(l.blocksize).enumerate() {
        let start = u32::try_from(out.len()).unwrap_or(u32::MAX);
        put32(out, starts.saturating_add(j.saturating_mul(4)), start);
        let bsize = block.len();
        let src: &[u8] = match l.prefilter {
            Prefilter::Shuffle if l.typesize > 1 => {
                filtered = shuffle::shuffle(block, l.typesize);
                &filtered
            }
            Prefilter::BitShuffle { all_or_nothing } if bsize >= l.typesize => {
                let elements = bsize.checked_div(l.typesize).unwrap_or(0);
                let whole = if all_or_nothing {
                    if elements % 8 == 0 { elements } else { 0 }
                } else {
                    elements & !7
                };
                let body = whole.saturating_mul(l.typesize).min(bsize);
                filtered.resize(bsize, 0);
                let (d_body, d_tail) = filtered.split_at_mut(body);
                let (s_body, s_tail) = block.split_at(body);
                bitshuffle::transpose_block(s_body, l.typesize, d_body);
                d_tail.copy_from_slice(s_tail.get(..d_tail.len()).unwrap_or_default());
                &filtered
            }
            Prefilter::Delta => {
                let w = match l.typesize {
                    1 | 2 | 4 | 8 => l.typesize,
                    t if t % 8 == 0 => 8,
                    _ => 1,
                };
                let body = bsize.checked_div(w).unwrap_or(0).saturating_mul(w);
                filtered.clear();
                filtered.extend_from_slice(block);
                if j == 0 {
                    for (i, b) in filtered.iter_mut().enumerate().take(body).skip(w) {
                        *b ^= block.get(i.saturating_sub(w)).copied().unwrap_or(0);
                    }
                } else {
                    let first = data.get(..l.blocksize).unwrap_or_default();
                    for (b, r) in filtered.iter_mut().zip(first).take(body) {
                        *b ^= r;
                    }
                }
                &filtered
            }
            _ => block,
        };
        let leftover = bsize < l.blocksize;
        let nstreams = if l.split && !leftover { l.typesize } else { 1 };
        let neblock = bsize.checked_div(nstreams).unwrap_or(bsize).max(1);
        for stream in src.chunks(neblock) {
            let at = out.len();
            out.extend_from_slice(&[0; 4]);
            l.compressor.encode(stream, l.level, out);
            let mut csize = out.len().saturating_sub(at).saturating_sub(4);
            // A stream no shorter than its input is stored as it is (a stored size equal to
            // the stream's length means raw).
            if csize == 0 || csize >= stream.len() {
                out.truncate(at.saturating_add(4));
                out.extend_from_slice(stream);
                csize = stream.len();
            }
            put32(out, at, u32::try_from(csize).unwrap_or(u32::MAX));
            if out.len() > max {
                return false;
            }
        }
    }
    true
}

fn client(cd: &[u32], i: usize, default: u32) -> u32 {
    cd.get(i).copied().unwrap_or(default)
}

fn bad(filter: &'static str, cd: &[u32]) -> FilterError {
    FilterError::BadParameters {
        filter,
        client_data: cd.to_vec(),
    }
}

/// The level of client data 4 (0..=9).
fn level(filter: &'static str, cd: &[u32]) -> Result<u8, FilterError> {
    u8::try_from(client(cd, 4, 5))
        .ok()
        .filter(|&l| l <= 9)
        .ok_or_else(|| bad(filter, cd))
}

/// One Blosc 1 buffer of `data`, as hdf5plugin's Blosc filter writes it; `None` when the
/// reference filter fails on it (its output may not outgrow its input: chunks under 128 bytes,
/// level 0, data that does not compress), which leaves an optional filter's chunk unfiltered.
pub fn compress_blosc(
    data: &[u8],
    cd: &[u32],
    element_size: usize,
) -> Result<Option<Vec<u8>>, FilterError> {
    const F: &str = "blosc";
    let level = level(F, cd)?;
    let shuffle = client(cd, 5, 1);
    let compressor = Compressor::from_code(F, client(cd, 6, 0))?;
    let mut typesize = cd.get(2).map_or(element_size, |&t| t as usize);
    // The filter's set_local stores type sizes over 255 as 1.
    if typesize == 0 || typesize > 255 {
        typesize = 1;
    }
    let prefilter = match shuffle {
        0 => Prefilter::None,
        1 => Prefilter::Shuffle,
        2 => Prefilter::BitShuffle {
            all_or_nothing: true,
        },
        _ => return Err(bad(F, cd)),
    };
    let nbytes = data.len();
    if nbytes < BLOSC1_MIN_BUFFER || level == 0 || nbytes > MAX_BUFFER {
        return Ok(None);
    }
    // c-blosc's forward-compatible split: every codec but Zstandard, small types, blocks of at
    // least 128 elements (its readers split exactly then, unless the flag says not to).
    let splits = |b: usize| {
        compressor != Compressor::Zstd
            && typesize <= 16
            && b.checked_div(typesize).unwrap_or(0) >= BLOSC1_MIN_BUFFER
    };
    let blocksize = block_size(nbytes, typesize, level, compressor, splits);
    let split = splits(blocksize);
    let mut flags = compressor.format() << 5;
    if !split {
        flags |= 0x10;
    }
    flags |= match prefilter {
        Prefilter::Shuffle => 0x01,
        Prefilter::BitShuffle { .. } => 0x04,
        // Not made for Blosc 1 (its client data have no delta).
        Prefilter::None | Prefilter::Delta => 0,
    };
    let mut out = crate::buffer(F, nbytes.saturating_add(64))?;
    out.extend_from_slice(&[2, 1, flags, typesize as u8]);
    for v in [nbytes, blocksize, 0] {
        out.extend_from_slice(&u32::try_from(v).unwrap_or(0).to_le_bytes());
    }
    let layout = Layout {
        typesize,
        blocksize,
        split,
        prefilter,
        compressor,
        level,
    };
    if !encode_blocks(data, &layout, &mut out, nbytes) {
        return Ok(None);
    }
    let total = u32::try_from(out.len()).unwrap_or(0);
    put32(&mut out, 12, total);
    Ok(Some(out))
}

/// One Blosc2 contiguous frame of `data` (one chunk), as hdf5plugin's Blosc2 filter writes it
/// for chunks of one dimension. Precision truncation (lossy) is refused by name.
pub fn compress_blosc2(
    data: &[u8],
    cd: &[u32],
    element_size: usize,
) -> Result<Vec<u8>, FilterError> {
    const F: &str = "blosc2";
    let level = level(F, cd)?;
    let compressor = Compressor::from_code(F, client(cd, 6, 0))?;
    let filter = client(cd, 5, 1);
    let prefilter = match filter {
        0 => Prefilter::None,
        1 => Prefilter::Shuffle,
        2 => Prefilter::BitShuffle {
            all_or_nothing: false,
        },
        3 => Prefilter::Delta,
        4 => {
            return Err(FilterError::Unsupported {
                filter: F,
                what: "writing with precision truncation",
            });
        }
        _ => {
            return Err(FilterError::Unsupported {
                filter: F,
                what: "writing with user-defined filters",
            });
        }
    };
    let typesize = cd.get(2).map_or(element_size, |&t| t as usize);
    let typesize_byte =
        u8::try_from(typesize)
            .ok()
            .filter(|&t| t > 0)
            .ok_or(FilterError::Unsupported {
                filter: F,
                what: "writing a type size of 0 or above 255 bytes",
            })?;
    let nbytes = data.len();
    if nbytes > MAX_BUFFER {
        return Err(FilterError::Unsupported {
            filter: F,
            what: "writing chunks of 2 GiB or more",
        });
    }
    // c-blosc2's automatic split: the fast codecs over byte-shuffled small types.
    let fast = matches!(compressor, Compressor::BloscLz | Compressor::Lz4)
        || (compressor == Compressor::Zstd && level <= 5);
    let splits = |b: usize| {
        fast && prefilter == Prefilter::Shuffle
            && typesize <= 16
            && b.checked_div(typesize).unwrap_or(0) >= BLOSC2_MIN_BUFFER
    };
    let blocksize = match client(cd, 1, 0) as usize {
        0 => block_size(nbytes, typesize, level, compressor, splits),
        forced => {
            let b = forced.min(nbytes).max(1);
            if b > typesize {
                b.checked_div(typesize)
                    .unwrap_or(b)
                    .saturating_mul(typesize)
            } else {
                b
            }
        }
    };
    let split = splits(blocksize);
    let mut flags = 0x05 | (compressor.format() << 5);
    if !split {
        flags |= 0x10;
    }
    let filters = [0, 0, 0, 0, 0, filter as u8];
    let header = |flags: u8, blocksize: usize| {
        let mut h = Vec::with_capacity(EXTENDED);
        h.extend_from_slice(&[5, 1, flags, typesize_byte]);
        for v in [nbytes, blocksize, 0] {
            h.extend_from_slice(&u32::try_from(v).unwrap_or(0).to_le_bytes());
        }
        h.extend_from_slice(&filters);
        h.extend_from_slice(&[compressor.code(), 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        h
    };
    let mut chunk = crate::buffer(F, nbytes.saturating_add(EXTENDED).saturating_add(64))?;
    chunk.extend_from_slice(&header(flags, blocksize));
    let layout = Layout {
        typesize,
        blocksize,
        split,
        prefilter,
        compressor,
        level,
    };
    let max = nbytes.saturating_add(EXTENDED);
    if level == 0 || nbytes < BLOSC2_MIN_BUFFER || !encode_blocks(data, &layout, &mut chunk, max) {
        // Stored raw after the header (memcpyed).
        chunk.clear();
        chunk.extend_from_slice(&header(flags | 0x02, blocksize));
        chunk.extend_from_slice(data);
    }
    let cbytes = chunk.len();
    put32(&mut chunk, 12, u32::try_from(cbytes).unwrap_or(0));
    Ok(frame(
        &chunk,
        nbytes,
        typesize,
        blocksize,
        compressor,
        level,
        filter as u8,
    ))
}

/// A contiguous frame (format version 2, 64-bit offsets) holding one chunk.
fn frame(
    chunk: &[u8],
    nbytes: usize,
    typesize: usize,
    blocksize: usize,
    compressor: Compressor,
    level: u8,
    filter: u8,
) -> Vec<u8> {
    const HEADER_LEN: u32 = 0x61;
    let mut f = Vec::with_capacity(chunk.len().saturating_add(200));
    f.extend_from_slice(&[0x9e, 0xa8]);
    f.extend_from_slice(b"b2frame\0");
    f.push(0xd2);
    f.extend_from_slice(&HEADER_LEN.to_be_bytes());
    // The frame's length, filled in at the end.
    f.push(0xcf);
    f.extend_from_slice(&[0; 8]);
    // Flags: version 2 with 64-bit offsets, a contiguous frame, the codec and level, the split
    // mode (forward compatible).
    f.extend_from_slice(&[0xa4, 0x12, 0x00, compressor.code() | (level << 4), 0x03]);
    f.push(0xd3);
    f.extend_from_slice(&(nbytes as u64).to_be_bytes());
    f.push(0xd3);
    f.extend_from_slice(&(chunk.len() as u64).to_be_bytes());
    for v in [typesize, blocksize, nbytes] {
        f.push(0xd2);
        f.extend_from_slice(&u32::try_from(v).unwrap_or(0).to_be_bytes());
    }
    // Threads for compression and decompression, no variable-length metalayers.
    f.extend_from_slice(&[0xd1, 0, 1, 0xd1, 0, 1, 0xc2]);
    // The filter pipeline: six filters, the codec, its metadata, six filter metadata, flags.
    f.extend_from_slice(&[0xd8, 6, 0, 0, 0, 0, 0, filter, compressor.code()]);
    f.extend_from_slice(&[0; 9]);
    // No metalayers: [size of the index, {}, []].
    f.extend_from_slice(&[0x93, 0xcd, 0x00, 0x07, 0xde, 0x00, 0x00, 0xdc, 0x00, 0x00]);
    f.extend_from_slice(chunk);
    // The chunk index: a raw Blosc2 chunk of one 64-bit offset (0: the first chunk).
    f.extend_from_slice(&[5, 1, 0x07, 8]);
    for v in [8u32, 8, 40] {
        f.extend_from_slice(&v.to_le_bytes());
    }
    f.extend_from_slice(&[0, 0, 0, 0, 0, 1]);
    f.extend_from_slice(&[0; 10]);
    f.extend_from_slice(&0u64.to_le_bytes());
    // The trailer: version 1, no variable-length metalayers, its length, no fingerprint.
    f.extend_from_slice(&[
        0x94, 0x01, 0x93, 0xcd, 0x00, 0x06, 0xde, 0x00, 0x00, 0xdc, 0x00, 0x00,
    ]);
    f.push(0xce);
    f.extend_from_slice(&35u32.to_be_bytes());
    f.extend_from_slice(&[0xd8, 0x00]);
    f.extend_from_slice(&[0; 16]);
    let len = f.len() as u64;
    if let Some(d) = f.get_mut(0x10..0x18) {
        d.copy_from_slice(&len.to_be_bytes());
    }
    f
}

/// Compress `src` as one BloscLZ stream appended to `out` (the format
/// [`super::blosc::blosclz_decompress`] reads): literal runs of 1 to 32 bytes, and matches of at least
/// 4 bytes found through a hash of the next 4 bytes, at a distance of up to 8191 (13 bits) or
/// 8192 + 65535 (the far form). The stream starts and ends with a literal run (c-blosc's
/// decoder masks the first control byte as a literal's and drops a match that ends the stream).
///
/// Positions are indexes into `src`, whose length is below 2^31, so the arithmetic on them does
/// not overflow; the reads go through `get`.
#[allow(clippy::arithmetic_side_effects)]
pub(super) fn blosclz_compress(src: &[u8], out: &mut Vec<u8>) {
    const HASH_LOG: u32 = 14;
    const NEAR: usize = 8191;
    const FAR: usize = 8192 + 65535;
    const MIN_MATCH: usize = 4;
    let n = src.len();
    let read32 = |p: usize| {
        src.get(p..)
            .and_then(|s| s.first_chunk::<4>())
            .map_or(0, |b| u32::from_le_bytes(*b))
    };
    let hash = |v: u32| (v.wrapping_mul(2_654_435_761) >> (32 - HASH_LOG)) as usize;
    let mut table = vec![0u32; 1 << HASH_LOG];
    let mut anchor = 0usize;
    let mut ip = 1usize;
    // A match leaves at least one byte after it, for the closing literal run.
    while n > MIN_MATCH + 1 && ip + MIN_MATCH < n {
        let v = read32(ip);
        let h = hash(v);
        let cand = table.get(h).map_or(0, |&c| c as usize);
        if let Some(slot) = table.get_mut(h) {
            *slot = (ip + 1) as u32;
        }
        let distance = ip.wrapping_sub(cand.wrapping_sub(1));
        if cand == 0 || distance > FAR || distance == 0 || read32(cand - 1) != v {
            ip += 1;
            continue;
        }
        let from = cand - 1;
        let mut len = MIN_MATCH;
        while ip + len < n - 1 && src.get(from + len) == src.get(ip + len) {
            len += 1;
        }
        // A far match costs two more bytes: not worth it below 6.
        if distance > NEAR && len < 6 {
            ip += 1;
            continue;
        }
        push_literals(src.get(anchor..ip).unwrap_or_default(), out);
        let (low, code, far) = if distance <= NEAR {
            let d = distance - 1;
            ((d >> 8) as u8, (d & 0xFF) as u8, None)
        } else {
            (31u8, 255u8, Some((distance - NEAR - 1) as u16))
        };
        if len - 2 < 7 {
            out.push((((len - 2) as u8) << 5) | low);
        } else {
            out.push((7 << 5) | low);
            let mut rest = len - 9;
            while rest >= 255 {
                out.push(255);
                rest -= 255;
            }
            out.push(rest as u8);
        }
        out.push(code);
        if let Some(ofs) = far {
            out.extend_from_slice(&ofs.to_be_bytes());
        }
        // Positions inside the match feed the table sparsely.
        let end = ip + len;
        let mut p = ip + 1;
        while p + MIN_MATCH < end {
            if let Some(slot) = table.get_mut(hash(read32(p))) {
                *slot = (p + 1) as u32;
            }
            p += 3;
        }
        ip = end;
        anchor = end;
    }
    push_literals(src.get(anchor..).unwrap_or_default(), out);
}

/// Literal runs of at most 32 bytes.
fn push_literals(lit: &[u8], out: &mut Vec<u8>) {
    for run in lit.chunks(32) {
        out.push(u8::try_from(run.len().saturating_sub(1)).unwrap_or(31));
        out.extend_from_slice(run);
    }
}

#[cfg(test)]
#[allow(clippy::arithmetic_side_effects)]
mod tests {
    use super::super::blosc;
    use super::*;

    fn samples() -> Vec<Vec<u8>> {
        let mut next = crate::xorshift(0x1234_5678_9ABC_DEF0u64);
        let noise: Vec<u8> = (0..70_000).map(|_| next() as u8).collect();
        let steps: Vec<u8> = (0..300_000u32)
            .flat_map(|i| (i / 13).to_le_bytes())
            .collect();
        // Far repeats: a block of noise repeated 20 KB later.
        let mut far = noise[..20_000].to_vec();
        far.extend_from_slice(&noise[..20_000]);
        far.extend_from_slice(&[7; 300]);
        vec![
            vec![],
            vec![1],
            vec![5; 6],
            b"abcabcabcabcabcabcabcabcabcabc".to_vec(),
            noise,
            steps,
            far,
            vec![0; 100_000],
        ]
    }

    #[test]
    fn blosclz_streams_decode_to_their_input() {
        for s in samples() {
            let mut z = Vec::new();
            blosclz_compress(&s, &mut z);
            let mut back = Vec::new();
            blosc::blosclz_decompress(&z, s.len(), &mut back).unwrap();
            assert_eq!(back.len(), s.len());
            assert!(back == s, "{} bytes", s.len());
        }
    }

    #[test]
    fn blosc_buffers_read_back_for_every_codec_and_shuffle() {
        for s in samples() {
            for code in [0, 1, 2, 4, 5] {
                for shuffle in [0, 1, 2, 3] {
                    for (ts, level) in [(1, 5), (2, 1), (4, 9), (8, 3), (3, 5), (16, 7)] {
                        let cd = [2, 2, ts, s.len() as u32, level, shuffle, code];
                        // Blosc 1 has no delta.
                        let blosc1 = if shuffle < 3 {
                            compress_blosc(&s, &cd, ts as usize).unwrap()
                        } else {
                            None
                        };
                        match blosc1 {
                            Some(z) => {
                                assert!(z.len() <= s.len());
                                let back = blosc::decompress(&z, s.len()).unwrap();
                                assert!(back == s, "{code} {shuffle} {ts}: {} bytes", s.len());
                            }
                            // Only what does not compress (or is too small) is left to the
                            // pipeline; the steps and the zeros always compress.
                            None => assert!(s.len() < 100_000 || shuffle == 3, "{} bytes", s.len()),
                        }
                        if s.is_empty() {
                            // HDF5 chunks are never empty.
                            continue;
                        }
                        let cd = [1, 0, ts, s.len() as u32, level, shuffle, code];
                        let z = compress_blosc2(&s, &cd, ts as usize).unwrap();
                        let back = super::super::blosc2::decompress(&z, s.len()).unwrap();
                        assert!(back == s, "blosc2 {code} {shuffle} {ts}: {} bytes", s.len());
                    }
                }
            }
        }
    }

    #[test]
    fn refuses_what_it_cannot_write_by_name() {
        let data = vec![1u8; 1000];
        let e = compress_blosc(&data, &[2, 2, 4, 1000, 5, 1, 3], 4).unwrap_err();
        assert_eq!(
            e.to_string(),
            "blosc: writing with the Snappy codec is not available"
        );
        let e = compress_blosc2(&data, &[1, 0, 4, 1000, 5, 4, 1], 4).unwrap_err();
        assert_eq!(
            e.to_string(),
            "blosc2: writing with precision truncation is not available"
        );
        assert!(matches!(
            compress_blosc(&data, &[2, 2, 4, 1000, 10, 1, 1], 4),
            Err(FilterError::BadParameters { .. })
        ));
    }
}
