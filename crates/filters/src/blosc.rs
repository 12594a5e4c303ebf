//! The Blosc filter (32001), read only: each chunk is one Blosc 1 buffer (c-blosc 1.x, format
//! version 2), whose blocks are byte- or bit-shuffled and compressed with BloscLZ, LZ4, LZ4HC,
//! zlib or Zstandard (Snappy is refused by name).
//!
//! Buffer (integers little-endian):
//!
//! | size  | field                                                                     |
//! |-------|---------------------------------------------------------------------------|
//! | 1     | format version                                                            |
//! | 1     | codec format version                                                      |
//! | 1     | flags: 0x01 byte shuffle, 0x02 stored raw (memcpyed), 0x04 bit shuffle,   |
//! |       | 0x10 blocks not split, bits 5-7 codec (0 BloscLZ, 1 LZ4/LZ4HC, 2 Snappy,  |
//! |       | 3 zlib, 4 Zstandard)                                                      |
//! | 1     | type size                                                                 |
//! | 4     | uncompressed size                                                         |
//! | 4     | block size                                                                |
//! | 4     | compressed size, this header included                                     |
//! |       | stored raw: the data; else:                                               |
//! | 4·n   | offset of each block in the buffer                                        |
//! |       | per block, per split (a full block of a type size of at most 16 whose     |
//! |       | elements number at least 128 is split in one stream per byte of the type, |
//! |       | unless flag 0x10): 4-byte compressed size (= the split's size: raw), data |

use std::io::Read;

use super::{FilterError, bitshuffle, lz4, shuffle, zstd};

const HEADER: usize = 16;
const FLAG_SHUFFLE: u8 = 0x01;
const FLAG_MEMCPYED: u8 = 0x02;
const FLAG_BITSHUFFLE: u8 = 0x04;
const FLAG_DONT_SPLIT: u8 = 0x10;
/// Blocks of a larger type size are never split.
const MAX_SPLITS: usize = 16;
/// Blocks of fewer elements are never split.
const MIN_SPLIT_ELEMENTS: usize = 128;
/// BloscLZ: matches at least this far away use a 16-bit distance after the 255 marker.
const BLOSCLZ_MAX_DISTANCE: usize = 8191;

fn corrupt(reason: impl Into<String>) -> FilterError {
    FilterError::Corrupt {
        filter: "blosc",
        reason: reason.into(),
    }
}

fn le32(data: &[u8], at: usize) -> Result<usize, FilterError> {
    data.get(at..)
        .and_then(|s| s.first_chunk::<4>())
        .map(|b| u32::from_le_bytes(*b) as usize)
        .ok_or_else(|| corrupt("truncated buffer"))
}

thread_local! {
    /// A block's decoded splits, kept from one chunk to the next on each thread (a fresh
    /// buffer each chunk cost a zero fill per split, and page faults once the allocator
    /// trimmed it).
    static SPLITS: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// Undo the filter, refusing a buffer that declares more than `limit` bytes.
pub fn decompress(data: &[u8], limit: usize) -> Result<Vec<u8>, FilterError> {
    decompress_to(data, limit, &mut []).map(Option::unwrap_or_default)
}

/// [`decompress`] into `out`, which the buffer must fill exactly.
pub fn decompress_into(data: &[u8], limit: usize, out: &mut [u8]) -> Result<(), FilterError> {
    into_place(decompress_to(data, limit, out)?, out, corrupt)
}

/// The end of a decode into `out` that wrote it in place (`None`) or gave a buffer of its own
/// (`Some`: copied in when its length is `out`'s, refused otherwise, through `corrupt`).
/// Blosc and Blosc2 end so.
pub(crate) fn into_place(
    decoded: Option<Vec<u8>>,
    out: &mut [u8],
    corrupt: fn(String) -> FilterError,
) -> Result<(), FilterError> {
    match decoded {
        None => Ok(()),
        Some(v) if v.len() == out.len() => {
            out.copy_from_slice(&v);
            Ok(())
        }
        Some(v) => Err(corrupt(format!(
            "chunk decodes to {} bytes, expected {}",
            v.len(),
            out.len()
        ))),
    }
}

/// Undo the filter: into `dest` when the buffer declares exactly its length (`None`), else
/// into a new buffer (`Some`).
pub(super) fn decompress_to(
    data: &[u8],
    limit: usize,
    dest: &mut [u8],
) -> Result<Option<Vec<u8>>, FilterError> {
    let &[version, _, flags, typesize, ..] = data
        .first_chunk::<HEADER>()
        .ok_or_else(|| corrupt("buffer shorter than its 16-byte header"))?;
    if !(1..=2).contains(&version) {
        return Err(FilterError::Unsupported {
            filter: "blosc",
            what: "Blosc format versions other than 1 and 2 (Blosc2 buffers)",
        });
    }
    let nbytes = le32(data, 4)?;
    let blocksize = le32(data, 8)?;
    let ctbytes = le32(data, 12)?;
    if nbytes > limit {
        return Err(corrupt(format!(
            "declares {nbytes} bytes, more than the chunk's {limit}"
        )));
    }
    let data = data
        .get(..ctbytes)
        .filter(|_| ctbytes >= HEADER)
        .ok_or_else(|| corrupt(format!("declares {ctbytes} bytes, the chunk holds fewer")))?;
    if flags & FLAG_MEMCPYED != 0 {
        let raw = data
            .get(HEADER..HEADER.saturating_add(nbytes))
            .ok_or_else(|| corrupt("truncated raw buffer"))?;
        if raw.len() == dest.len() {
            dest.copy_from_slice(raw);
            return Ok(None);
        }
        let mut out = crate::buffer("blosc", raw.len())?;
        out.extend_from_slice(raw);
        return Ok(Some(out));
    }
    let typesize = usize::from(typesize);
    if typesize == 0 || (blocksize == 0 && nbytes != 0) {
        return Err(corrupt("type size or block size 0"));
    }
    let codec = match flags >> 5 {
        0 => Codec::BloscLz,
        1 => Codec::Lz4,
        2 => {
            return Err(FilterError::Unsupported {
                filter: "blosc",
                what: "the Snappy codec",
            });
        }
        3 => Codec::Zlib,
        4 => Codec::Zstd,
        other => return Err(corrupt(format!("codec {other}"))),
    };
    let nblocks = nbytes.div_ceil(blocksize.max(1));
    // The block offsets must fit in the buffer: this bounds the loop by the chunk's size.
    if nblocks.saturating_mul(4) > data.len().saturating_sub(HEADER) {
        return Err(corrupt("block offsets past the end of the buffer"));
    }
    let layout = Blocks {
        data,
        flags,
        typesize,
        nbytes,
        blocksize,
        nblocks,
        codec,
    };
    let mut splits = SPLITS.take();
    let done = if nbytes == dest.len() {
        layout.decode(dest, &mut splits).map(|()| None)
    } else {
        crate::zeroed("blosc", nbytes)
            .and_then(|mut out| layout.decode(&mut out, &mut splits).map(|()| Some(out)))
    };
    if splits.capacity() <= 64 << 20 {
        SPLITS.set(splits);
    }
    done
}

/// A Blosc buffer's blocks, as its header describes them.
struct Blocks<'a> {
    data: &'a [u8],
    flags: u8,
    typesize: usize,
    nbytes: usize,
    blocksize: usize,
    nblocks: usize,
    codec: Codec,
}

impl Blocks<'_> {
    /// Decode every block into `out` (`nbytes` long): the splits into `tmp`, then unshuffled
    /// (or copied) into their place in `out`.
    fn decode(&self, out: &mut [u8], tmp: &mut Vec<u8>) -> Result<(), FilterError> {
        let (data, flags, typesize, blocksize, nbytes) = (
            self.data,
            self.flags,
            self.typesize,
            self.blocksize,
            self.nbytes,
        );
        for j in 0..self.nblocks {
            let start = le32(data, HEADER.saturating_add(j.saturating_mul(4)))?;
            let done = j.saturating_mul(blocksize);
            let bsize = blocksize.min(nbytes.saturating_sub(done));
            let leftover_block = bsize < blocksize;
            let split = flags & FLAG_DONT_SPLIT == 0
                && typesize <= MAX_SPLITS
                && blocksize.checked_div(typesize).unwrap_or(0) >= MIN_SPLIT_ELEMENTS
                && !leftover_block;
            let nsplits = if split { typesize } else { 1 };
            let neblock = bsize.checked_div(nsplits).unwrap_or(0);
            if neblock.saturating_mul(nsplits) != bsize {
                return Err(corrupt(format!(
                    "block {j} of {bsize} bytes does not split in {nsplits}"
                )));
            }
            let dest = out
                .get_mut(done..done.saturating_add(bsize))
                .ok_or_else(|| corrupt("block past the buffer"))?;
            let shuffled = flags & FLAG_SHUFFLE != 0 && typesize > 1;
            let bitshuffled = !shuffled
                && flags & FLAG_BITSHUFFLE != 0
                && bsize >= typesize
                && bsize.checked_div(typesize).unwrap_or(0) % 8 == 0;
            if !shuffled && !bitshuffled {
                // Nothing to undo: the splits go straight to their place.
                self.splits(start, nsplits, neblock, dest)?;
                continue;
            }
            if tmp.len() < bsize {
                crate::reserve(tmp, "blosc", bsize.saturating_sub(tmp.len()))?;
                tmp.resize(bsize, 0);
            }
            let tmp = tmp.get_mut(..bsize).unwrap_or_default();
            self.splits(start, nsplits, neblock, tmp)?;
            if shuffled {
                shuffle::unshuffle_into(tmp, typesize, dest);
            } else {
                // Whole elements bit-transposed as one block, the bytes after them as they are.
                let elements = bsize.checked_div(typesize).unwrap_or(0);
                let body = elements.saturating_mul(typesize).min(bsize);
                let (d_body, d_tail) = dest.split_at_mut(body);
                let (t_body, t_tail) = tmp.split_at(body);
                bitshuffle::untranspose_block(t_body, typesize, d_body);
                d_tail.copy_from_slice(t_tail);
            }
        }
        Ok(())
    }

    /// Decode the `nsplits` splits of the block at `at` into `to` (`neblock` bytes each).
    fn splits(
        &self,
        mut at: usize,
        nsplits: usize,
        neblock: usize,
        to: &mut [u8],
    ) -> Result<(), FilterError> {
        let data = self.data;
        for piece in to.chunks_exact_mut(neblock.max(1)).take(nsplits) {
            let cbytes = le32(data, at)?;
            at = at.saturating_add(4);
            let src = data
                .get(at..at.saturating_add(cbytes))
                .ok_or_else(|| corrupt("split past the end of the buffer"))?;
            at = at.saturating_add(cbytes);
            if cbytes == neblock {
                piece.copy_from_slice(src);
            } else {
                self.codec.decode_into(src, piece)?;
            }
        }
        Ok(())
    }
}

#[derive(Clone, Copy)]
pub(super) enum Codec {
    BloscLz,
    Lz4,
    Zlib,
    Zstd,
}

impl Codec {
    /// Decode `src` to exactly fill `out`: LZ4 in place, the others through a buffer.
    pub(super) fn decode_into(self, src: &[u8], out: &mut [u8]) -> Result<(), FilterError> {
        if let Codec::Lz4 = self {
            return lz4::decompress_block_into(src, out).map_err(corrupt);
        }
        let mut v = Vec::new();
        self.decode(src, out.len(), &mut v)?;
        let got = v
            .get(..out.len())
            .ok_or_else(|| corrupt("split decodes short"))?;
        out.copy_from_slice(got);
        Ok(())
    }

    /// Decode `src` to exactly `len` bytes appended to `out`.
    pub(super) fn decode(
        self,
        src: &[u8],
        len: usize,
        out: &mut Vec<u8>,
    ) -> Result<(), FilterError> {
        let before = out.len();
        match self {
            Codec::BloscLz => {
                crate::reserve(out, "blosc", len)?;
                blosclz_decompress(src, len, out)?;
            }
            Codec::Lz4 => {
                crate::reserve(out, "blosc", len)?;
                lz4::decompress_block(src, len, out).map_err(corrupt)?;
            }
            Codec::Zstd => zstd::decompress_exact(src, len, out)?,
            Codec::Zlib => {
                // The split's room (and a byte to see an overrun), allocated fallibly.
                crate::reserve(out, "blosc", len.saturating_add(1))?;
                flate2::read::ZlibDecoder::new(src)
                    .take(u64::try_from(len).unwrap_or(u64::MAX).saturating_add(1))
                    .read_to_end(out)
                    .map_err(|e| crate::stream_error("blosc", &e, len))?;
            }
        }
        let got = out.len().saturating_sub(before);
        if got != len {
            return Err(corrupt(format!(
                "split decodes to {got} bytes, expected {len}"
            )));
        }
        Ok(())
    }
}

/// Decode a BloscLZ stream of at most `max` bytes, appended to `out`.
///
/// Each control byte is a literal run (below 32: that many bytes plus one) or a match: the top
/// three bits are the length minus 2 (7: add the following bytes up to one below 255), the low
/// five bits and the next byte the distance minus 1; a next byte of 255 with low bits all ones
/// means a 16-bit big-endian distance beyond 8191 follows. The first control byte is always a
/// literal run. A match that ends the stream is not copied (the encoder never writes one).
pub(super) fn blosclz_decompress(
    src: &[u8],
    max: usize,
    out: &mut Vec<u8>,
) -> Result<(), FilterError> {
    let start = out.len();
    let limit = start.saturating_add(max);
    let bad = |why: &str| corrupt(format!("BloscLZ: {why}"));
    let mut ip = src;
    let Some((&first, rest)) = ip.split_first() else {
        return Ok(());
    };
    ip = rest;
    let mut ctrl = usize::from(first & 31);
    loop {
        if ctrl >= 32 {
            let mut len = (ctrl >> 5).saturating_sub(1);
            let mut ofs = (ctrl & 31) << 8;
            let next = |ip: &mut &[u8]| -> Result<usize, FilterError> {
                let (&b, rest) = ip.split_first().ok_or_else(|| bad("truncated match"))?;
                *ip = rest;
                Ok(usize::from(b))
            };
            if len == 6 {
                loop {
                    if ip.len() < 2 {
                        return Err(bad("truncated match length"));
                    }
                    let code = next(&mut ip)?;
                    len = len.saturating_add(code);
                    if code != 255 {
                        break;
                    }
                }
            } else if ip.len() < 2 {
                return Err(bad("truncated match"));
            }
            let code = next(&mut ip)?;
            len = len.saturating_add(3);
            // The distance back from the output's end to the match's first byte.
            let mut distance = ofs.saturating_add(code).saturating_add(1);
            if code == 255 && ofs == 31 << 8 {
                if ip.len() < 2 {
                    return Err(bad("truncated far distance"));
                }
                ofs = next(&mut ip)? << 8;
                ofs = ofs.saturating_add(next(&mut ip)?);
                distance = ofs.saturating_add(BLOSCLZ_MAX_DISTANCE).saturating_add(1);
            }
            if out.len().saturating_add(len) > limit {
                return Err(bad("output past the expected size"));
            }
            let from = out
                .len()
                .checked_sub(distance)
                .filter(|&f| f >= start)
                .ok_or_else(|| bad("match before the start"))?;
            let Some((&c, rest)) = ip.split_first() else {
                break;
            };
            ip = rest;
            ctrl = usize::from(c);
            if distance >= len {
                out.extend_from_within(from..from.saturating_add(len));
            } else {
                for k in (from..).take(len) {
                    let b = out.get(k).copied().unwrap_or(0);
                    out.push(b);
                }
            }
        } else {
            let run = ctrl.saturating_add(1);
            if out.len().saturating_add(run) > limit {
                return Err(bad("output past the expected size"));
            }
            let (lit, rest) = ip
                .split_at_checked(run)
                .ok_or_else(|| bad("literal run past the end"))?;
            out.extend_from_slice(lit);
            ip = rest;
            let Some((&c, rest)) = ip.split_first() else {
                break;
            };
            ip = rest;
            ctrl = usize::from(c);
        }
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::arithmetic_side_effects)] // clippy.toml already lets tests index and unwrap
mod tests {
    use super::*;

    #[test]
    fn decodes_a_hand_made_blosclz_stream() {
        // "abc" as a literal run, a match of length 7 at distance 3, then a literal "z".
        let stream = [2, b'a', b'b', b'c', (5 << 5), 2, 0, b'z'];
        let mut out = Vec::new();
        blosclz_decompress(&stream, 11, &mut out).unwrap();
        assert_eq!(out, b"abcabcabcaz");
        assert!(blosclz_decompress(&stream, 10, &mut Vec::new()).is_err());
        // A match reaching before the start.
        assert!(blosclz_decompress(&[0, b'a', (1 << 5), 5, 0, b'z'], 20, &mut Vec::new()).is_err());
    }

    #[test]
    fn rejects_bad_headers() {
        // Version 2, LZ4, type size 4, 1000 bytes in blocks of 256, 20 bytes in all.
        let mut h = vec![2, 1, 0x20, 4];
        h.extend(1000u32.to_le_bytes());
        h.extend(256u32.to_le_bytes());
        h.extend(20u32.to_le_bytes());
        h.extend([0; 4]);
        // Declares more than the chunk.
        assert!(decompress(&h, 999).is_err());
        // Block offsets past the buffer.
        assert!(decompress(&h, 1000).is_err());
        for n in 0..h.len() {
            assert!(decompress(&h[..n], 1000).is_err());
        }
        h[0] = 4;
        assert!(matches!(
            decompress(&h, 1000),
            Err(FilterError::Unsupported { .. })
        ));
    }
}
