//! LZ4: the block format, and the HDF5 LZ4 filter (32004) that frames it.
//!
//! The block compressor makes the same choices as liblz4's `LZ4_compress_default` (the fast
//! compressor at acceleration 1 with a fresh state), so a block h5chunk writes is byte for byte
//! the block the reference filters write: the same hash tables (13-bit of 4-byte sequences for
//! inputs under 64 KiB + 11, 12-bit of 5-byte sequences above), the same skip acceleration, the
//! same backward extension, and the same end-of-block rules (the last match starts at least 12
//! bytes before the end, the last 5 bytes are literals).
//!
//! HDF5 LZ4 filter chunk (all integers big-endian):
//!
//! | size | field                                                                      |
//! |------|----------------------------------------------------------------------------|
//! | 8    | original (decompressed) size of the chunk                                  |
//! | 4    | block size: client data 0, or 0 = 1 GiB; at most the original size        |
//! |      | per block (the last one may be shorter):                                   |
//! | 4    | stored size; equal to the block's length when the block is stored raw     |
//! | n    | an LZ4 block, or the raw bytes when LZ4 would not make them smaller        |

use super::FilterError;

const MINMATCH: usize = 4;
/// A match starts at least this many bytes before the end of the block.
const MFLIMIT: usize = 12;
/// The last bytes of a block are always literals.
const LASTLITERALS: usize = 5;
/// Inputs shorter than this use the 16-bit table of 4-byte hashes.
const LIMIT_64K: usize = 65536 + MFLIMIT - 1;
const HASH_LOG: u32 = 12;
const SKIP_TRIGGER: u32 = 6;
const DISTANCE_MAX: usize = 65535;
const RUN_MASK: usize = 15;
const ML_MASK: usize = 15;
/// liblz4's largest input (`LZ4_MAX_INPUT_SIZE`).
pub const MAX_INPUT: usize = 0x7E00_0000;

/// The HDF5 LZ4 filter's block size when the client data gives none.
const DEFAULT_FILTER_BLOCK: usize = 1 << 30;

fn read32(src: &[u8], p: usize) -> u32 {
    src.get(p..)
        .and_then(|s| s.first_chunk::<4>())
        .map_or(0, |b| u32::from_le_bytes(*b))
}

fn read64(src: &[u8], p: usize) -> u64 {
    src.get(p..)
        .and_then(|s| s.first_chunk::<8>())
        .map_or(0, |b| u64::from_le_bytes(*b))
}

fn byte(src: &[u8], p: usize) -> Option<u8> {
    src.get(p).copied()
}

/// Append a literal or match length's continuation bytes (after the token's 15).
fn push_length(out: &mut Vec<u8>, mut len: usize) {
    while len >= 255 {
        out.push(255);
        len = len.saturating_sub(255);
    }
    out.push(len as u8);
}

/// How many bytes from `a` on equal those from `b` on (`b < a`), not reaching `limit`: eight
/// at a time, as liblz4's `LZ4_count`.
#[allow(clippy::arithmetic_side_effects)] // positions below `src.len()`, itself below 2^31
fn count_equal(src: &[u8], a: usize, b: usize, limit: usize) -> usize {
    let mut len = 0usize;
    while a + len + 8 <= limit {
        let x = read64(src, a + len) ^ read64(src, b + len);
        if x != 0 {
            return len + (x.trailing_zeros() / 8) as usize;
        }
        len += 8;
    }
    while a + len < limit && byte(src, a + len) == byte(src, b + len) {
        len += 1;
    }
    len
}

/// The hash table entries: 2^13 for inputs under 64 KiB (13-bit hashes), 2^12 above.
const TABLE: usize = 1 << (HASH_LOG + 1);

/// The position table of one block, with liblz4's hash of the block's size class.
struct Hashes<'a, const SMALL: bool> {
    src: &'a [u8],
    table: Box<[u32; TABLE]>,
}

impl<const SMALL: bool> Hashes<'_, SMALL> {
    #[inline(always)]
    fn hash(&self, p: usize) -> usize {
        if SMALL {
            (read32(self.src, p).wrapping_mul(2_654_435_761) >> (32 - (HASH_LOG + 1))) as usize
        } else {
            ((read64(self.src, p) << 24).wrapping_mul(889_523_592_379) >> (64 - HASH_LOG)) as usize
        }
    }

    #[inline(always)]
    fn get(&self, h: usize) -> usize {
        self.table.get(h).map_or(0, |&v| v as usize)
    }

    #[inline(always)]
    fn put(&mut self, h: usize, p: usize) {
        if let Some(slot) = self.table.get_mut(h) {
            *slot = p as u32;
        }
    }
}

/// Compress `src` (at most [`MAX_INPUT`] bytes) into one LZ4 block appended to `out`, as
/// liblz4's `LZ4_compress_default` does.
pub fn compress_block(src: &[u8], out: &mut Vec<u8>) {
    let n = src.len();
    out.reserve(n.saturating_add(n / 255).saturating_add(16));
    let table = Box::new([0u32; TABLE]);
    if n < LIMIT_64K {
        compress_with(Hashes::<true> { src, table }, out);
    } else {
        compress_with(Hashes::<false> { src, table }, out);
    }
}

/// [`compress_block`] with the table of the input's size class.
///
/// Positions are indexes into `src`, whose length is below 2^31, so the arithmetic on them does
/// not overflow; the reads go through `get`.
#[allow(clippy::arithmetic_side_effects)]
#[inline(always)]
fn compress_with<const SMALL: bool>(mut t: Hashes<'_, SMALL>, out: &mut Vec<u8>) {
    let src = t.src;
    let n = src.len();
    let mut anchor = 0usize;
    if n > MFLIMIT {
        let mflimit_plus_one = n - MFLIMIT + 1;
        let match_limit = n - LASTLITERALS;
        let h0 = t.hash(0);
        t.put(h0, 0);
        let mut ip = 1usize;
        let mut forward_h = t.hash(ip);
        'main: loop {
            // Find a match: probe forward, faster the longer nothing matches.
            let mut forward_ip = ip;
            let mut step = 1usize;
            let mut searches = 1usize << SKIP_TRIGGER;
            let mut m;
            loop {
                let h = forward_h;
                let current = forward_ip;
                let candidate = t.get(h);
                ip = forward_ip;
                forward_ip += step;
                step = searches >> SKIP_TRIGGER;
                searches += 1;
                if forward_ip > mflimit_plus_one {
                    break 'main;
                }
                m = candidate;
                forward_h = t.hash(forward_ip);
                t.put(h, current);
                if !SMALL && candidate + DISTANCE_MAX < current {
                    continue;
                }
                if read32(src, m) == read32(src, ip) {
                    break;
                }
            }
            // Extend the match backwards over equal bytes, not past the literals' start.
            while ip > anchor && m > 0 && byte(src, ip - 1) == byte(src, m - 1) {
                ip -= 1;
                m -= 1;
            }
            let literals = ip - anchor;
            let mut token_at = out.len();
            if literals >= RUN_MASK {
                out.push((RUN_MASK << 4) as u8);
                push_length(out, literals - RUN_MASK);
            } else {
                out.push((literals << 4) as u8);
            }
            out.extend_from_slice(src.get(anchor..ip).unwrap_or_default());
            // Encode the match, then as long as the next position matches at once, another.
            loop {
                out.extend_from_slice(&((ip - m) as u16).to_le_bytes());
                let len = count_equal(src, ip + MINMATCH, m + MINMATCH, match_limit);
                ip += len + MINMATCH;
                let code = if len >= ML_MASK {
                    push_length(out, len - ML_MASK);
                    ML_MASK
                } else {
                    len
                };
                if let Some(token) = out.get_mut(token_at) {
                    *token |= code as u8;
                }
                anchor = ip;
                if ip >= mflimit_plus_one {
                    break 'main;
                }
                let h2 = t.hash(ip - 2);
                t.put(h2, ip - 2);
                let h = t.hash(ip);
                let candidate = t.get(h);
                t.put(h, ip);
                if (SMALL || candidate + DISTANCE_MAX >= ip)
                    && read32(src, candidate) == read32(src, ip)
                {
                    token_at = out.len();
                    out.push(0);
                    m = candidate;
                    continue;
                }
                break;
            }
            ip += 1;
            forward_h = t.hash(ip);
        }
    }
    let last = n - anchor;
    if last >= RUN_MASK {
        out.push((RUN_MASK << 4) as u8);
        push_length(out, last - RUN_MASK);
    } else {
        out.push((last << 4) as u8);
    }
    out.extend_from_slice(src.get(anchor..).unwrap_or_default());
}

/// Decode one LZ4 block that must fill `out` exactly.
pub fn decompress_block_into(src: &[u8], out: &mut [u8]) -> Result<(), &'static str> {
    match lz4_flex::block::decompress_into(src, out) {
        Ok(n) if n == out.len() => Ok(()),
        Ok(_) => Err("block decodes short of the expected size"),
        Err(_) => Err("corrupt block"),
    }
}

/// Decode one LZ4 block that must produce exactly `expected` bytes, appended to `out`.
pub fn decompress_block(
    src: &[u8],
    expected: usize,
    out: &mut Vec<u8>,
) -> Result<(), &'static str> {
    let start = out.len();
    let end = start.checked_add(expected).ok_or("output too long")?;
    // The callers reserve this room already (as a typed error); this reservation is then free.
    out.try_reserve_exact(expected)
        .map_err(|_| "cannot allocate the block's output")?;
    out.resize(end, 0);
    let done = decompress_block_into(src, out.get_mut(start..).unwrap_or_default());
    if done.is_err() {
        out.truncate(start);
    }
    done
}

fn corrupt(reason: impl Into<String>) -> FilterError {
    FilterError::Corrupt {
        filter: "lz4",
        reason: reason.into(),
    }
}

/// Apply the HDF5 LZ4 filter with `block_size` bytes per block (0: the filter's default).
pub fn compress(data: &[u8], block_size: u32) -> Result<Vec<u8>, FilterError> {
    let n = data.len();
    if n > i32::MAX as usize {
        return Err(corrupt("the filter compresses chunks below 2 GiB"));
    }
    let block = match block_size as usize {
        0 => DEFAULT_FILTER_BLOCK,
        b => b,
    }
    .min(n);
    let mut out = Vec::with_capacity(n.saturating_add(n / 255).saturating_add(64));
    out.extend_from_slice(&(n as u64).to_be_bytes());
    out.extend_from_slice(&(block as u32).to_be_bytes());
    for raw in data.chunks(block.max(1)) {
        // Compressed in place after its length; stored raw instead when LZ4 does not shrink it.
        let at = out.len();
        out.extend_from_slice(&[0; 4]);
        compress_block(raw, &mut out);
        let mut len = out.len().saturating_sub(at).saturating_sub(4);
        if len >= raw.len() {
            out.truncate(at.saturating_add(4));
            out.extend_from_slice(raw);
            len = raw.len();
        }
        if let Some(dst) = out.get_mut(at..at.saturating_add(4)) {
            dst.copy_from_slice(&(len as u32).to_be_bytes());
        }
    }
    Ok(out)
}

/// The chunk's declared size and its blocks (after the 12-byte header).
fn header(data: &[u8]) -> Result<(usize, usize, &[u8]), FilterError> {
    let (header, rest) = data
        .split_first_chunk::<12>()
        .ok_or_else(|| corrupt("chunk shorter than its 12-byte header"))?;
    let (size, block) = header.split_at(8);
    let size = u64::from_be_bytes(size.try_into().unwrap_or_default());
    let block = u32::from_be_bytes(block.try_into().unwrap_or_default());
    let size = usize::try_from(size).map_err(|_| corrupt(format!("declares {size} bytes")))?;
    let block = (block as usize).min(size);
    if block == 0 && size != 0 {
        return Err(corrupt("block size 0"));
    }
    Ok((size, block, rest))
}

/// Decode the blocks of a chunk into `out`, as long as the chunk's declared size.
fn decode_blocks(mut rest: &[u8], block: usize, out: &mut [u8]) -> Result<(), FilterError> {
    let mut left = out;
    while !left.is_empty() {
        let this = block.min(left.len());
        let (dst, tail_out) = left.split_at_mut(this);
        let (len, tail) = rest
            .split_first_chunk::<4>()
            .ok_or_else(|| corrupt("truncated block header"))?;
        let len = u32::from_be_bytes(*len) as usize;
        let (stored, tail) = tail
            .split_at_checked(len)
            .ok_or_else(|| corrupt("block past the end of the chunk"))?;
        if len == this {
            dst.copy_from_slice(stored);
        } else {
            decompress_block_into(stored, dst).map_err(corrupt)?;
        }
        rest = tail;
        left = tail_out;
    }
    Ok(())
}

/// Undo the HDF5 LZ4 filter; the declared size may not exceed `limit`.
pub fn decompress(data: &[u8], limit: usize) -> Result<Vec<u8>, FilterError> {
    let (size, block, rest) = header(data)?;
    if size > limit {
        return Err(corrupt(format!(
            "declares {size} bytes, more than the chunk's {limit}"
        )));
    }
    let mut out = crate::zeroed("lz4", size)?;
    decode_blocks(rest, block, &mut out)?;
    Ok(out)
}

/// Undo the HDF5 LZ4 filter straight into `out`, which the chunk must fill exactly.
pub fn decompress_into(data: &[u8], out: &mut [u8]) -> Result<(), FilterError> {
    let (size, block, rest) = header(data)?;
    if size != out.len() {
        return Err(corrupt(format!(
            "declares {size} bytes, the chunk holds {}",
            out.len()
        )));
    }
    decode_blocks(rest, block, out)
}

#[cfg(test)]
#[allow(clippy::arithmetic_side_effects)] // clippy.toml already lets tests index and unwrap
mod tests {
    use super::*;

    fn samples() -> Vec<Vec<u8>> {
        let mut v = vec![
            vec![],
            vec![7],
            b"abcabcabcabcabcabcabc".to_vec(),
            vec![0u8; 100_000],
        ];
        v.push(
            (0..70_000u32)
                .flat_map(|i| ((i / 5) as u16).to_le_bytes())
                .collect(),
        );
        v.push(
            (0..20_000u32)
                .map(|i| (i.wrapping_mul(2_654_435_761) >> 23) as u8)
                .collect(),
        );
        v
    }

    #[test]
    fn roundtrip_blocks() {
        for data in samples() {
            let mut c = Vec::new();
            compress_block(&data, &mut c);
            let mut d = Vec::new();
            decompress_block(&c, data.len(), &mut d).unwrap();
            assert_eq!(d, data);
            assert!(decompress_block(&c, data.len() + 1, &mut Vec::new()).is_err());
            if !data.is_empty() {
                assert!(decompress_block(&c, data.len() - 1, &mut Vec::new()).is_err());
            }
        }
    }

    #[test]
    fn roundtrip_filter_every_block_size() {
        for data in samples() {
            for block in [0, 1, 100, 4096, 1 << 20] {
                let c = compress(&data, block).unwrap();
                assert_eq!(decompress(&c, data.len()).unwrap(), data, "block {block}");
            }
        }
    }

    #[test]
    fn rejects_truncation_and_flipped_bytes() {
        let data: Vec<u8> = (0..3000u32).flat_map(|i| (i / 3).to_le_bytes()).collect();
        let c = compress(&data, 1000).unwrap();
        for n in 0..c.len() {
            assert!(decompress(&c[..n], data.len()).is_err(), "prefix {n}");
        }
        for i in 0..c.len() {
            let mut bad = c.clone();
            bad[i] ^= 0x5a;
            // A flipped literal still decodes; nothing may panic or exceed the limit.
            if let Ok(d) = decompress(&bad, data.len()) {
                assert!(d.len() <= data.len());
            }
        }
    }

    #[test]
    fn rejects_a_declared_size_above_the_chunk() {
        let mut c = compress(&[1u8; 100], 0).unwrap();
        assert!(decompress(&c, 99).is_err());
        c[..8].copy_from_slice(&u64::MAX.to_be_bytes());
        assert!(matches!(
            decompress(&c, 100),
            Err(FilterError::Corrupt { .. })
        ));
    }
}
