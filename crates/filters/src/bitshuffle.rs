//! The bitshuffle filter (32008): bit `k` of byte `j` of every element of a block is gathered
//! into bit plane `8j + k`, then each block is optionally compressed with LZ4 or Zstandard.
//!
//! Client data: major and minor version of the filter that wrote it, element size, block size
//! in elements (0: [`default_block`]), compression (0 none, 2 LZ4, 3 Zstandard), Zstandard level.
//!
//! A block of `n` elements (`n` a multiple of 8) of `s` bytes transposes to `8s` planes of `n/8`
//! bytes; element `i` is bit `i % 8` of byte `i / 8` of each plane. A chunk is cut into blocks of
//! the block size, then one last block of the remaining elements rounded down to a multiple of 8;
//! the elements left over (fewer than 8) are copied as they are at the end.
//!
//! Without compression the chunk is those blocks, the same size as the data. With compression
//! (integers big-endian):
//!
//! | size | field                                                                     |
//! |------|---------------------------------------------------------------------------|
//! | 8    | size of the chunk's data in bytes                                         |
//! | 4    | block size in bytes (block size in elements × element size)               |
//! |      | per block:                                                                |
//! | 4    | size of the compressed block                                              |
//! | n    | the block's planes, compressed as one LZ4 block or one Zstandard frame    |
//! |      | then the left-over elements, raw                                          |

use fearless_simd::{Level, Simd, SimdBase, dispatch, u8x16, u32x4};

use super::{FilterError, lz4, zstd};

/// Block sizes are a multiple of this many elements.
const BLOCK_MULTIPLE: usize = 8;
/// The block size the filter chooses aims at this many bytes.
const TARGET_BLOCK_BYTES: usize = 8192;
/// ... but at least this many elements.
const MIN_DEFAULT_BLOCK: usize = 128;

/// Compression client-data values.
pub const COMPRESS_NONE: u32 = 0;
/// LZ4 blocks.
pub const COMPRESS_LZ4: u32 = 2;
/// Zstandard frames.
pub const COMPRESS_ZSTD: u32 = 3;

/// The block size (elements) the filter uses when the client data gives 0.
pub fn default_block(element_size: usize) -> usize {
    let block = TARGET_BLOCK_BYTES.checked_div(element_size).unwrap_or(0);
    round_down(block).max(MIN_DEFAULT_BLOCK)
}

/// `n` rounded down to a multiple of [`BLOCK_MULTIPLE`].
fn round_down(n: usize) -> usize {
    n.saturating_sub(n % BLOCK_MULTIPLE)
}

/// Compression of the blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Bit transpose only.
    None,
    /// LZ4 blocks.
    Lz4,
    /// Zstandard frames at a level.
    Zstd(i32),
}

/// A parsed bitshuffle parameter set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Params {
    /// Element size in bytes.
    pub element_size: usize,
    /// Elements per block (a multiple of 8).
    pub block: usize,
    /// The compression.
    pub mode: Mode,
}

impl Params {
    /// Parse the client data (`element_size` fills in a missing element size).
    pub fn parse(cd: &[u32], element_size: usize) -> Option<Params> {
        let element_size = match cd.get(2) {
            Some(&s) => s as usize,
            None => element_size,
        };
        if element_size == 0 {
            return None;
        }
        let block = match cd.get(3).copied().unwrap_or(0) as usize {
            0 => default_block(element_size),
            b => b,
        };
        if !block.is_multiple_of(BLOCK_MULTIPLE) {
            return None;
        }
        let mode = match cd.get(4).copied().unwrap_or(COMPRESS_NONE) {
            COMPRESS_NONE => Mode::None,
            COMPRESS_LZ4 => Mode::Lz4,
            COMPRESS_ZSTD => Mode::Zstd(cd.get(5).map_or(0, |&l| l as i32)),
            _ => return None,
        };
        Some(Params {
            element_size,
            block,
            mode,
        })
    }
}

fn corrupt(reason: impl Into<String>) -> FilterError {
    FilterError::Corrupt {
        filter: "bitshuffle",
        reason: reason.into(),
    }
}

/// Transpose the 8×8 bit matrix whose row `r` is byte `r` (bit `c` of row `r` is bit `8r + c`).
fn transpose8(mut x: u64) -> u64 {
    let mut t = (x ^ (x >> 7)) & 0x00AA_00AA_00AA_00AA;
    x ^= t ^ (t << 7);
    t = (x ^ (x >> 14)) & 0x0000_CCCC_0000_CCCC;
    x ^= t ^ (t << 14);
    t = (x ^ (x >> 28)) & 0x0000_0000_F0F0_F0F0;
    x ^ t ^ (t << 28)
}

/// Transpose the 8×8 byte matrix whose row `k` is word `k` (byte `g` of word `k` becomes byte
/// `k` of word `g`), by swapping ever smaller blocks: 4×4, 2×2, 1×1.
#[inline(always)]
fn transpose_bytes(w: &mut [u64; 8]) {
    #[inline(always)]
    fn swap(w: &mut [u64; 8], a: usize, b: usize, shift: u32, mask: u64) {
        if let (Some(&x), Some(&y)) = (w.get(a), w.get(b)) {
            let t = ((x >> shift) ^ y) & mask;
            if let Some(v) = w.get_mut(b) {
                *v = y ^ t;
            }
            if let Some(v) = w.get_mut(a) {
                *v = x ^ (t << shift);
            }
        }
    }
    for a in 0..4 {
        swap(w, a, a | 4, 32, 0x0000_0000_FFFF_FFFF);
    }
    for a in [0, 1, 4, 5] {
        swap(w, a, a | 2, 16, 0x0000_FFFF_0000_FFFF);
    }
    for a in [0, 2, 4, 6] {
        swap(w, a, a | 1, 8, 0x00FF_00FF_00FF_00FF);
    }
}

/// Eight little-endian words at `p + k * stride` of `src`, for `k` in 0..8 (0 past the end).
#[inline(always)]
fn gather_words(src: &[u8], p: usize, stride: usize) -> [u64; 8] {
    let mut w = [0u64; 8];
    let mut at = p;
    for v in &mut w {
        *v = src
            .get(at..)
            .and_then(|s| s.first_chunk::<8>())
            .map_or(0, |b| u64::from_le_bytes(*b));
        at = at.saturating_add(stride);
    }
    w
}

/// `v` made `len` bytes long; what it holds is left as it is (every user overwrites it all).
fn sized(v: &mut Vec<u8>, len: usize) {
    if v.len() != len {
        v.clear();
        v.resize(len, 0);
    }
}

/// [`transpose8`] of every 8-byte word of `words` in place (a loop LLVM vectorises).
fn transpose8_all(words: &mut [u8]) {
    for w in words.chunks_exact_mut(8) {
        if let Ok(w) = <&mut [u8; 8]>::try_from(w) {
            *w = transpose8(u64::from_le_bytes(*w)).to_le_bytes();
        }
    }
}

/// [`transpose8`] of every 8-byte word of `src` into `dst` (a loop LLVM vectorises).
fn transpose8_copy(src: &[u8], dst: &mut [u8]) {
    for (d, w) in dst.chunks_exact_mut(8).zip(src.chunks_exact(8)) {
        if let (Ok(d), Ok(w)) = (<&mut [u8; 8]>::try_from(d), <&[u8; 8]>::try_from(w)) {
            *d = transpose8(u64::from_le_bytes(*w)).to_le_bytes();
        }
    }
}

/// Bit-transpose one byte per element: `input` (`8m` bytes, one per element) becomes eight
/// planes of `m` bytes in `out` (bit `k` of byte `i` is bit `i % 8` of byte `i / 8` of plane `k`).
///
/// Every 8-byte word (eight elements) is an 8×8 bit matrix (element × bit), transposed to bit
/// × element into `scratch` (all words in one vectorised pass); then each 8×8 byte matrix of
/// eight such words (column × plane) is transposed, so that word `k` holds eight bytes of
/// plane `k`.
fn transpose_row(input: &[u8], out: &mut [u8], scratch: &mut Vec<u8>) {
    let m = out.len() / 8;
    if m > 0 && m.is_multiple_of(16) {
        let level = Level::new();
        dispatch!(level, simd => deinterleave8_simd(simd, input, out, m));
        return;
    }
    let groups = m / 8;
    sized(scratch, input.len());
    transpose8_copy(input, scratch);
    for (c, block) in scratch.chunks_exact(64).take(groups).enumerate() {
        let mut w = gather_words(block, 0, 8);
        transpose_bytes(&mut w);
        let col = c.saturating_mul(8);
        for (k, v) in w.iter().enumerate() {
            let at = k.saturating_mul(m).saturating_add(col);
            if let Some(dst) = out.get_mut(at..at.saturating_add(8)) {
                dst.copy_from_slice(&v.to_le_bytes());
            }
        }
    }
    // The last columns (fewer than eight) one byte of each plane at a time.
    for col in groups.saturating_mul(8)..m {
        let at = col.saturating_mul(8);
        let Some(y) = scratch.get(at..).and_then(|s| s.first_chunk::<8>()) else {
            break;
        };
        for (k, &b) in y.iter().enumerate() {
            if let Some(dst) = out.get_mut(k.saturating_mul(m).saturating_add(col)) {
                *dst = b;
            }
        }
    }
}

/// Interleave the bytes of `a` and `b` into `out` (`a0 b0 a1 b1 ...`): a loop LLVM vectorises.
fn interleave1(a: &[u8], b: &[u8], out: &mut [u8]) {
    for ((d, &x), &y) in out.chunks_exact_mut(2).zip(a).zip(b) {
        d.copy_from_slice(&[x, y]);
    }
}

/// Interleave the 2-byte units of `a` and `b` into `out`.
fn interleave2(a: &[u8], b: &[u8], out: &mut [u8]) {
    for ((d, x), y) in out
        .chunks_exact_mut(4)
        .zip(a.chunks_exact(2))
        .zip(b.chunks_exact(2))
    {
        let (lo, hi) = d.split_at_mut(2);
        lo.copy_from_slice(x);
        hi.copy_from_slice(y);
    }
}

/// Interleave the 4-byte units of `a` and `b` into `out`.
fn interleave4(a: &[u8], b: &[u8], out: &mut [u8]) {
    for ((d, x), y) in out
        .chunks_exact_mut(8)
        .zip(a.chunks_exact(4))
        .zip(b.chunks_exact(4))
    {
        let (lo, hi) = d.split_at_mut(4);
        lo.copy_from_slice(x);
        hi.copy_from_slice(y);
    }
}

/// Byte `i` of the eight `planes` (`m` bytes each, a multiple of 16) into word `i` of `out`,
/// each word then bit-transposed: [`untranspose_row`] in one pass, sixteen columns at a
/// time: zipping the bytes of planes `k` and `k + 4`, then of those results `k` and `k + 2`,
/// then `k` and `k + 1`, puts plane `k`'s byte at place `k` of each word. Through
/// fearless_simd: LLVM turns none of the three rounds into byte unpacks on baseline x86-64.
#[inline(always)]
fn interleave8_simd<S: Simd>(simd: S, planes: [&[u8]; 8], out: &mut [u8]) {
    let cols = planes.map(|p| p.as_chunks::<16>().0);
    let (outs, _) = out.as_chunks_mut::<128>();
    for (g, o) in outs.iter_mut().enumerate() {
        let v = cols.map(|c| {
            c.get(g)
                .map_or_else(|| u8x16::splat(simd, 0), |x| u8x16::from_slice(simd, x))
        });
        // One round: `w[2j]`, `w[2j + 1]` are the low and high zips of `v[j]` and
        // `v[j + 4]`.
        let round = |v: [u8x16<S>; 8]| -> [u8x16<S>; 8] {
            let [a0, a1, a2, a3, b0, b1, b2, b3] = v;
            [
                simd.zip_low_u8x16(a0, b0),
                simd.zip_high_u8x16(a0, b0),
                simd.zip_low_u8x16(a1, b1),
                simd.zip_high_u8x16(a1, b1),
                simd.zip_low_u8x16(a2, b2),
                simd.zip_high_u8x16(a2, b2),
                simd.zip_low_u8x16(a3, b3),
                simd.zip_high_u8x16(a3, b3),
            ]
        };
        let [w0, w1, w2, w3, w4, w5, w6, w7] = round(round(round(v)));
        let words = [
            transpose8_simd(simd, w0, w1),
            transpose8_simd(simd, w2, w3),
            transpose8_simd(simd, w4, w5),
            transpose8_simd(simd, w6, w7),
        ];
        let (dst, _) = o.as_chunks_mut::<16>();
        for (d, x) in dst.iter_mut().zip(words.into_iter().flatten()) {
            d.copy_from_slice(x.as_slice());
        }
    }
}

/// [`transpose_row`] of `input` (`8m` bytes, `m` a multiple of 16) into the eight planes of
/// `out`, sixteen columns (128 bytes) at a time: the inverse of [`interleave8_simd`], each
/// word bit-transposed ([`transpose8`] is its own inverse), then three rounds of byte unzips
/// (each rotating the 7-bit byte index right by one) leave plane `k`'s sixteen bytes in
/// vector `k`.
#[inline(always)]
#[allow(clippy::arithmetic_side_effects)] // places within `out`: 8m bytes, so k·m + 16g + 16 fits
fn deinterleave8_simd<S: Simd>(simd: S, input: &[u8], out: &mut [u8], m: usize) {
    let (groups, _) = input.as_chunks::<128>();
    for (g, x) in groups.iter().enumerate().take(m / 16) {
        let (x, _) = x.as_chunks::<16>();
        let v = |i: usize| {
            x.get(i)
                .map_or_else(|| u8x16::splat(simd, 0), |x| u8x16::from_slice(simd, x))
        };
        let [w0, w1] = transpose8_simd(simd, v(0), v(1));
        let [w2, w3] = transpose8_simd(simd, v(2), v(3));
        let [w4, w5] = transpose8_simd(simd, v(4), v(5));
        let [w6, w7] = transpose8_simd(simd, v(6), v(7));
        let w = [w0, w1, w2, w3, w4, w5, w6, w7];
        let planes = unround(simd, unround(simd, unround(simd, w)));
        let col = g * 16;
        for (k, p) in planes.iter().enumerate() {
            let at = k * m + col;
            if let Some(dst) = out.get_mut(at..at + 16) {
                dst.copy_from_slice(p.as_slice());
            }
        }
    }
}

/// One round of [`deinterleave8_simd`]: `v[j]` the even bytes of `w[2j]` and `w[2j + 1]`,
/// `v[j + 4]` the odd (a function, not a closure: a closure is not inlined into the caller's
/// target features, and the unzips' intrinsics then become calls).
#[inline(always)]
fn unround<S: Simd>(simd: S, w: [u8x16<S>; 8]) -> [u8x16<S>; 8] {
    let [a0, a1, b0, b1, c0, c1, d0, d1] = w;
    [
        simd.unzip_low_u8x16(a0, a1),
        simd.unzip_low_u8x16(b0, b1),
        simd.unzip_low_u8x16(c0, c1),
        simd.unzip_low_u8x16(d0, d1),
        simd.unzip_high_u8x16(a0, a1),
        simd.unzip_high_u8x16(b0, b1),
        simd.unzip_high_u8x16(c0, c1),
        simd.unzip_high_u8x16(d0, d1),
    ]
}

/// [`transpose8`] of the four words in `a` and `b`: their low and high halves gathered in
/// 32-bit lanes, where the first two steps stay within a half and the third moves bits
/// between the halves (`t = (lo ^ hi << 4) & 0xF0F0F0F0`, `lo ^= t`, `hi ^= t >> 4`).
#[inline(always)]
fn transpose8_simd<S: Simd>(simd: S, a: u8x16<S>, b: u8x16<S>) -> [u8x16<S>; 2] {
    let (a, b) = (simd.reinterpret_u32_u8x16(a), simd.reinterpret_u32_u8x16(b));
    let (lo, hi) = (simd.unzip_low_u32x4(a, b), simd.unzip_high_u32x4(a, b));
    let step = |x: u32x4<S>, shift: u32, mask: u32| {
        let t = simd.and_u32x4(
            simd.xor_u32x4(x, simd.shr_u32x4(x, shift)),
            u32x4::splat(simd, mask),
        );
        simd.xor_u32x4(x, simd.xor_u32x4(t, simd.shl_u32x4(t, shift)))
    };
    let (lo, hi) = (step(lo, 7, 0x00AA_00AA), step(hi, 7, 0x00AA_00AA));
    let (lo, hi) = (step(lo, 14, 0x0000_CCCC), step(hi, 14, 0x0000_CCCC));
    let t = simd.and_u32x4(
        simd.xor_u32x4(lo, simd.shl_u32x4(hi, 4)),
        u32x4::splat(simd, 0xF0F0_F0F0),
    );
    let (lo, hi) = (
        simd.xor_u32x4(lo, t),
        simd.xor_u32x4(hi, simd.shr_u32x4(t, 4)),
    );
    [
        simd.reinterpret_u8_u32x4(simd.zip_low_u32x4(lo, hi)),
        simd.reinterpret_u8_u32x4(simd.zip_high_u32x4(lo, hi)),
    ]
}

/// Undo [`transpose_row`]: eight planes of `m` bytes in `input` become `8m` bytes in `out`.
///
/// The 8 × m byte matrix of the planes is transposed first (word `g` of the result holds byte
/// `g` of each plane), by three rounds of pairwise interleaving (bytes, then 2-byte, then
/// 4-byte units), then each word's 8×8 bit matrix (plane × element) is transposed: every pass
/// a plain loop LLVM vectorises.
#[allow(clippy::arithmetic_side_effects)] // m = len / 8: 8m fits
fn untranspose_row(input: &[u8], out: &mut [u8], scratch: &mut Vec<u8>) {
    let len = input.len();
    let m = len / 8;
    if m == 0 {
        return;
    }
    if m.is_multiple_of(16) {
        let mut p = input.chunks_exact(m);
        let mut plane = || p.next().unwrap_or_default();
        let planes = [(); 8].map(|()| plane());
        let level = Level::new();
        dispatch!(level, simd => interleave8_simd(simd, planes, out));
        return;
    }
    sized(scratch, len);
    let mut planes = input.chunks_exact(m);
    // Bytes of planes 2i and 2i+1, interleaved, in quarter i of `out`.
    for q in out.chunks_exact_mut(2 * m).take(4) {
        let (Some(a), Some(b)) = (planes.next(), planes.next()) else {
            break;
        };
        interleave1(a, b, q);
    }
    // Those units of planes 0-3 and 4-7, interleaved, in the halves of `scratch`.
    let mut quarters = out.chunks_exact(2 * m);
    for h in scratch.chunks_exact_mut(4 * m) {
        let (Some(a), Some(b)) = (quarters.next(), quarters.next()) else {
            break;
        };
        interleave2(a, b, h);
    }
    let (a, b) = scratch.split_at(4 * m);
    interleave4(a, b, out);
    transpose8_all(out.get_mut(..8 * m).unwrap_or_default());
}

/// Bit-transpose one block of `input.len() / s` elements (a multiple of 8) into `out`.
///
/// The planes of byte `j` of the elements are the bit transpose of those bytes alone: the
/// block is byte-shuffled (the shuffle filter's planes), then each byte plane bit-transposed.
pub(super) fn transpose_block(input: &[u8], s: usize, out: &mut [u8]) {
    transpose_block_with(input, s, out, &mut [Vec::new(), Vec::new()]);
}

/// [`transpose_block`] with `scratch` for the byte planes (elements of more than a byte).
fn transpose_block_with(input: &[u8], s: usize, out: &mut [u8], scratch: &mut [Vec<u8>; 2]) {
    let [bytes, words] = scratch;
    if s <= 1 {
        transpose_row(input, out, words);
        return;
    }
    let n = input.len().checked_div(s).unwrap_or(0);
    sized(bytes, input.len());
    crate::shuffle::shuffle_into(input, s, bytes);
    for (row, dst) in bytes
        .chunks_exact(n.max(1))
        .zip(out.chunks_exact_mut(n.max(1)))
    {
        transpose_row(row, dst, words);
    }
}

/// Undo [`transpose_block`]: `input` holds the planes of `out.len() / s` elements.
pub(super) fn untranspose_block(input: &[u8], s: usize, out: &mut [u8]) {
    untranspose_block_with(input, s, out, &mut [Vec::new(), Vec::new()]);
}

/// [`untranspose_block`] with `scratch` for the byte planes (elements of more than a byte) and
/// the rows' interleaving.
fn untranspose_block_with(input: &[u8], s: usize, out: &mut [u8], scratch: &mut [Vec<u8>; 2]) {
    let [bytes, words] = scratch;
    if s <= 1 {
        untranspose_row(input, out, words);
        return;
    }
    let n = out.len().checked_div(s).unwrap_or(0);
    sized(bytes, out.len());
    for (row, dst) in input
        .chunks_exact(n.max(1))
        .zip(bytes.chunks_exact_mut(n.max(1)))
    {
        untranspose_row(row, dst, words);
    }
    crate::shuffle::unshuffle_into(bytes, s, out);
}

/// The byte lengths of the blocks of a chunk of `bytes` bytes, then the left-over length.
fn blocks(bytes: usize, p: &Params) -> (impl Iterator<Item = usize>, usize) {
    let s = p.element_size;
    let n = bytes.checked_div(s).unwrap_or(0);
    let full = n.checked_div(p.block).unwrap_or(0);
    let last = round_down(n.checked_rem(p.block).unwrap_or(0));
    let block_bytes = p.block.saturating_mul(s);
    let sizes =
        std::iter::repeat_n(block_bytes, full).chain((last > 0).then_some(last.saturating_mul(s)));
    (sizes, (n % BLOCK_MULTIPLE).saturating_mul(s))
}

/// Apply the filter.
pub fn compress(data: &[u8], p: &Params) -> Result<Vec<u8>, FilterError> {
    let mut out = Vec::new();
    let end = compress_at(data, p, &mut out, 0)?;
    out.truncate(end);
    Ok(out)
}

thread_local! {
    /// This thread's block buffers (the bit planes of a block, and the transpose's scratch),
    /// kept across chunks: a block's worth each, sized by the first chunk.
    static SCRATCH: std::cell::RefCell<(Vec<u8>, [Vec<u8>; 2])> =
        const { std::cell::RefCell::new((Vec::new(), [Vec::new(), Vec::new()])) };
}

/// [`compress`] at `out[at..]`: the chunk's end. `out` grows where it is shorter than a block
/// needs and is never shortened (bytes past the chunk are an earlier chunk's), so a buffer
/// kept across chunks is not zeroed again for each one (LZ4 blocks; a Zstandard block is
/// appended, and cuts `out` where it starts).
pub fn compress_at(
    data: &[u8],
    p: &Params,
    out: &mut Vec<u8>,
    at: usize,
) -> Result<usize, FilterError> {
    let kept = SCRATCH.try_with(|cell| {
        cell.try_borrow_mut().ok().map(|mut bufs| {
            let (planes, scratch) = &mut *bufs;
            compress_with(data, p, (out, at), planes, scratch)
        })
    });
    match kept {
        Ok(Some(done)) => done,
        // Not on this thread (its locals torn down, or a compression already running on it).
        _ => compress_with(
            data,
            p,
            (out, at),
            &mut Vec::new(),
            &mut [Vec::new(), Vec::new()],
        ),
    }
}

/// [`compress_at`] with the block buffers `planes` and `scratch`.
fn compress_with(
    data: &[u8],
    p: &Params,
    (out, at): (&mut Vec<u8>, usize),
    planes: &mut Vec<u8>,
    scratch: &mut [Vec<u8>; 2],
) -> Result<usize, FilterError> {
    let s = p.element_size;
    if data.len().checked_rem(s) != Some(0) {
        return Err(corrupt("the chunk is not a whole number of elements"));
    }
    let (sizes, leftover) = blocks(data.len(), p);
    let worst = at.saturating_add(data.len()).saturating_add(64);
    out.reserve(worst.saturating_sub(out.len()));
    let mut end = at;
    if p.mode != Mode::None {
        end = crate::put(out, end, &(data.len() as u64).to_be_bytes());
        let block_bytes = u32::try_from(p.block.saturating_mul(s))
            .ok()
            .filter(|&b| b as usize <= lz4::MAX_INPUT)
            .ok_or_else(|| corrupt("blocks over LZ4's and Zstandard's 2 GiB limit"))?;
        end = crate::put(out, end, &block_bytes.to_be_bytes());
    }
    let mut rest = data;
    for len in sizes {
        let (block, tail) = rest.split_at_checked(len).unwrap_or((rest, &[]));
        rest = tail;
        // Every byte of the planes is written by the transpose: only a longer block than the
        // last one grows (and zeroes) them.
        if planes.len() != block.len() {
            planes.resize(block.len(), 0);
        }
        transpose_block_with(block, s, planes, scratch);
        match p.mode {
            Mode::None => end = crate::put(out, end, planes),
            Mode::Lz4 | Mode::Zstd(_) => {
                let len_at = end;
                let body = len_at.saturating_add(4);
                end = match p.mode {
                    Mode::Zstd(level) => {
                        out.truncate(len_at);
                        out.resize(body, 0);
                        zstd::compress_into(planes, level, out);
                        out.len()
                    }
                    _ => lz4::compress_block_at(planes, out, body),
                };
                let len = u32::try_from(end.saturating_sub(body))
                    .map_err(|_| corrupt("block over 4 GiB"))?;
                crate::put(out, len_at, &len.to_be_bytes());
            }
        }
    }
    Ok(crate::put(out, end, rest.get(..leftover).unwrap_or(rest)))
}

/// The chunk's declared size, its parameters (the stored block size for a compressed chunk)
/// and its blocks.
fn header<'a>(data: &'a [u8], p: &Params) -> Result<(usize, Params, &'a [u8]), FilterError> {
    let s = p.element_size;
    let (size, p, rest) = match p.mode {
        Mode::None => (data.len(), *p, data),
        Mode::Lz4 | Mode::Zstd(_) => {
            let (header, rest) = data
                .split_first_chunk::<12>()
                .ok_or_else(|| corrupt("chunk shorter than its 12-byte header"))?;
            let (size, block) = header.split_at(8);
            let size = u64::from_be_bytes(size.try_into().unwrap_or_default());
            let block = (u32::from_be_bytes(block.try_into().unwrap_or_default()) as usize)
                .checked_div(s)
                .unwrap_or(0);
            let size =
                usize::try_from(size).map_err(|_| corrupt(format!("declares {size} bytes")))?;
            if block == 0 || !block.is_multiple_of(BLOCK_MULTIPLE) {
                return Err(corrupt(format!("block of {block} elements")));
            }
            (size, Params { block, ..*p }, rest)
        }
    };
    if size.checked_rem(s) != Some(0) {
        return Err(corrupt("the chunk is not a whole number of elements"));
    }
    Ok((size, p, rest))
}

/// Undo the filter; the chunk's declared size may not exceed `limit`.
pub fn decompress(data: &[u8], p: &Params, limit: usize) -> Result<Vec<u8>, FilterError> {
    let (size, p, rest) = header(data, p)?;
    if size > limit {
        return Err(corrupt(format!(
            "declares {size} bytes, more than the chunk's {limit}"
        )));
    }
    let mut out = crate::zeroed("bitshuffle", size)?;
    decode_blocks(rest, &p, &mut out)?;
    Ok(out)
}

/// Undo the filter straight into `out`, which the chunk must fill exactly.
pub fn decompress_into(data: &[u8], p: &Params, out: &mut [u8]) -> Result<(), FilterError> {
    let (size, p, rest) = header(data, p)?;
    if size != out.len() {
        return Err(corrupt(format!(
            "declares {size} bytes, the chunk holds {}",
            out.len()
        )));
    }
    decode_blocks(rest, &p, out)
}

/// Decode the blocks after the header into `out` (the chunk's declared size).
fn decode_blocks(mut rest: &[u8], p: &Params, out: &mut [u8]) -> Result<(), FilterError> {
    let s = p.element_size;
    let (sizes, leftover) = blocks(out.len(), p);
    let mut at = 0usize;
    let mut planes = Vec::new();
    let mut scratch = [Vec::new(), Vec::new()];
    for len in sizes {
        let block = match p.mode {
            Mode::None => {
                let (block, tail) = rest
                    .split_at_checked(len)
                    .ok_or_else(|| corrupt("truncated block"))?;
                rest = tail;
                block
            }
            Mode::Lz4 | Mode::Zstd(_) => {
                let (stored, tail) = rest
                    .split_first_chunk::<4>()
                    .ok_or_else(|| corrupt("truncated block header"))?;
                let stored = u32::from_be_bytes(*stored) as usize;
                let (stored, tail) = tail
                    .split_at_checked(stored)
                    .ok_or_else(|| corrupt("block past the end of the chunk"))?;
                rest = tail;
                match p.mode {
                    Mode::Zstd(_) => {
                        planes.clear();
                        zstd::decompress_exact(stored, len, &mut planes)?;
                    }
                    _ => {
                        if planes.len() != len {
                            planes.clear();
                            crate::reserve(&mut planes, "bitshuffle", len)?;
                            planes.resize(len, 0);
                        }
                        lz4::decompress_block_into(stored, &mut planes).map_err(corrupt)?;
                    }
                }
                planes.as_slice()
            }
        };
        let end = at.saturating_add(len);
        let dst = out
            .get_mut(at..end)
            .ok_or_else(|| corrupt("blocks past the chunk"))?;
        untranspose_block_with(block, s, dst, &mut scratch);
        at = end;
    }
    let tail = rest
        .get(..leftover)
        .ok_or_else(|| corrupt("truncated left-over elements"))?;
    if let Some(dst) = out.get_mut(at..at.saturating_add(leftover)) {
        dst.copy_from_slice(tail);
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::arithmetic_side_effects)] // clippy.toml already lets tests index and unwrap
mod tests {
    use super::*;

    /// The bit transpose as its definition states it, one bit at a time.
    fn naive(input: &[u8], s: usize) -> Vec<u8> {
        let n = input.len() / s;
        let mut out = vec![0u8; input.len()];
        for i in 0..n {
            for j in 0..s {
                for k in 0..8 {
                    let bit = (input[i * s + j] >> k) & 1;
                    out[(j * 8 + k) * (n / 8) + i / 8] |= bit << (i % 8);
                }
            }
        }
        out
    }

    fn data(len: usize) -> Vec<u8> {
        (0..len as u32)
            .map(|i| ((i / 3) ^ (i.wrapping_mul(2_654_435_761) >> 29)) as u8)
            .collect()
    }

    #[test]
    fn transpose_matches_the_definition() {
        for (s, n) in [1, 2, 3, 4, 8, 12]
            .into_iter()
            .flat_map(|s| [8, 24, 64, 128, 136, 200, 1024, 2048].map(|n| (s, n)))
        {
            let input = data(s * n);
            let mut out = vec![0; input.len()];
            transpose_block(&input, s, &mut out);
            assert_eq!(out, naive(&input, s), "element size {s}, {n} elements");
            let mut back = vec![0; input.len()];
            untranspose_block(&out, s, &mut back);
            assert_eq!(back, input);
        }
    }

    #[test]
    fn default_blocks_are_the_filters() {
        assert_eq!(default_block(1), 8192);
        assert_eq!(default_block(4), 2048);
        assert_eq!(default_block(3), 2728);
        assert_eq!(default_block(128), 128);
    }

    #[test]
    fn roundtrip_every_mode_size_and_block() {
        for s in [1, 2, 4, 8, 3] {
            for elements in [0, 5, 8, 100, 1000, 4099] {
                let input = data(s * elements);
                for block in [0, 8, 64, 136] {
                    for mode in [COMPRESS_NONE, COMPRESS_LZ4, COMPRESS_ZSTD] {
                        let p = Params::parse(&[0, 4, s as u32, block, mode, 3], s).unwrap();
                        let c = compress(&input, &p).unwrap();
                        let d = decompress(&c, &p, input.len()).unwrap();
                        assert_eq!(d, input, "s {s} n {elements} block {block} mode {mode}");
                    }
                }
            }
        }
    }

    #[test]
    fn rejects_bad_parameters() {
        assert!(Params::parse(&[0, 4, 0, 0, 2], 4).is_none());
        assert!(Params::parse(&[0, 4, 4, 12, 2], 4).is_none());
        assert!(Params::parse(&[0, 4, 4, 0, 7], 4).is_none());
    }

    #[test]
    fn rejects_truncation_and_oversized_headers() {
        let input = data(4 * 3001);
        for mode in [COMPRESS_LZ4, COMPRESS_ZSTD] {
            let p = Params::parse(&[0, 4, 4, 256, mode], 4).unwrap();
            let c = compress(&input, &p).unwrap();
            for n in 0..c.len() {
                assert!(decompress(&c[..n], &p, input.len()).is_err(), "prefix {n}");
            }
            for i in 0..c.len() {
                let mut bad = c.clone();
                bad[i] ^= 0xa5;
                if let Ok(d) = decompress(&bad, &p, input.len()) {
                    assert!(d.len() <= input.len());
                }
            }
            let mut big = c.clone();
            big[..8].copy_from_slice(&(1u64 << 60).to_be_bytes());
            assert!(matches!(
                decompress(&big, &p, input.len()),
                Err(FilterError::Corrupt { .. })
            ));
        }
    }
}
