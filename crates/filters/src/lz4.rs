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

/// A position in the input, as the reads take it: inputs are below 2^31 bytes, so narrowing
/// to 32 bits changes nothing, and it tells the compiler that `p + 8` cannot overflow (one
/// bounds check a read, not two).
#[inline(always)]
fn pos(p: usize) -> usize {
    p as u32 as usize
}

#[inline(always)]
#[allow(clippy::arithmetic_side_effects)] // `pos` is below 2^32
fn read64(src: &[u8], p: usize) -> u64 {
    let p = pos(p);
    src.get(p..p + 8)
        .and_then(|s| s.first_chunk::<8>())
        .map_or(0, |b| u64::from_le_bytes(*b))
}

#[inline(always)]
fn byte(src: &[u8], p: usize) -> Option<u8> {
    src.get(p).copied()
}

/// Write one byte of output (the compressor's output is as long as the worst case).
#[inline(always)]
fn put_byte(out: &mut [u8], op: usize, b: u8) {
    if let Some(d) = out.get_mut(op) {
        *d = b;
    }
}

/// Append a literal or match length's continuation bytes (after the token's 15) at `op`.
#[inline(always)]
#[allow(clippy::arithmetic_side_effects)] // `op` stays within the worst case, below 2^32
fn put_length(out: &mut [u8], op: &mut usize, mut len: usize) {
    while len >= 255 {
        put_byte(out, *op, 255);
        *op += 1;
        len -= 255;
    }
    put_byte(out, *op, len as u8);
    *op += 1;
}

/// Copy the literals `src[from..from + len]` to `out[op..]`: in 32-byte pieces when both
/// sides have room for the length rounded up to a whole piece (the bytes past `len` are
/// overwritten later or lie past the block's end), else exactly. One bounds check a side,
/// not one a piece.
#[inline(always)]
#[allow(clippy::arithmetic_side_effects)] // positions and lengths below 2^32
fn put_literals(out: &mut [u8], op: usize, src: &[u8], from: usize, len: usize) {
    let (o, f, len) = (pos(op), pos(from), pos(len));
    let wild = (len + 31) & !31;
    match (out.get_mut(o..o + wild), src.get(f..f + wild)) {
        (Some(d), Some(s)) => {
            for (d, s) in d
                .as_chunks_mut::<32>()
                .0
                .iter_mut()
                .zip(s.as_chunks::<32>().0)
            {
                *d = *s;
            }
        }
        _ => {
            if let (Some(d), Some(s)) = (out.get_mut(o..o + len), src.get(f..f + len)) {
                d.copy_from_slice(s);
            }
        }
    }
}

/// Write one sequence at `out[op..]`: the `literals` bytes of `src` from `anchor`, then a
/// match `offset` bytes back and `len` bytes longer than [`MINMATCH`]; the sequence's end.
#[inline(always)]
#[allow(clippy::arithmetic_side_effects)] // `op` stays within the worst case, below 2^32
fn put_sequence(
    out: &mut [u8],
    op: usize,
    src: &[u8],
    (anchor, literals): (usize, usize),
    offset: usize,
    len: usize,
) -> usize {
    let token = ((literals.min(RUN_MASK) << 4) | len.min(ML_MASK)) as u8;
    let [lo, hi] = (offset as u16).to_le_bytes();
    let mut op = pos(op);
    put_byte(out, op, token);
    op += 1;
    if literals >= RUN_MASK {
        put_length(out, &mut op, literals - RUN_MASK);
    }
    put_literals(out, op, src, anchor, literals);
    op = pos(op + literals);
    if let Some(d) = out
        .get_mut(op..op + 2)
        .and_then(|d| d.first_chunk_mut::<2>())
    {
        *d = [lo, hi];
    }
    op += 2;
    if len >= ML_MASK {
        put_length(out, &mut op, len - ML_MASK);
    }
    op
}

/// A match straight after another (no literals) at `out[op..]`: its end. One 3-byte write
/// when the token holds the length.
#[inline(always)]
#[allow(clippy::arithmetic_side_effects)] // `op` stays within the worst case, below 2^32
fn put_match(out: &mut [u8], op: usize, offset: usize, len: usize) -> usize {
    let [lo, hi] = (offset as u16).to_le_bytes();
    let mut op = pos(op);
    if len < ML_MASK {
        if let Some(d) = out
            .get_mut(op..op + 3)
            .and_then(|d| d.first_chunk_mut::<3>())
        {
            *d = [len as u8, lo, hi];
        }
        return op + 3;
    }
    if let Some(d) = out
        .get_mut(op..op + 3)
        .and_then(|d| d.first_chunk_mut::<3>())
    {
        *d = [ML_MASK as u8, lo, hi];
    }
    op += 3;
    put_length(out, &mut op, len - ML_MASK);
    op
}

/// How many bytes from `a` on equal those from `b` on (`b < a`) within `hay`: eight at a
/// time, as liblz4's `LZ4_count`.
#[inline(always)]
#[allow(clippy::arithmetic_side_effects)] // positions below `src.len()`, itself below 2^31
fn count_equal(hay: &[u8], a: usize, b: usize) -> usize {
    // Most matches end within their first eight bytes: those take one test (is there a whole
    // word at `a`) and one pair of reads. `b < a`, and both reads are clamped to the last
    // word, which changes no read once the test passed and lets the compiler drop their
    // bounds checks (`hay` ends where matches must).
    let (a, b) = (pos(a), pos(b));
    let last = hay.len().saturating_sub(8);
    let word = |p: usize| {
        hay.get(p.min(last)..)
            .and_then(|s| s.first_chunk::<8>())
            .map_or(0, |w| u64::from_le_bytes(*w))
    };
    if a > last || hay.len() < 8 {
        return count_rest(hay, a, b);
    }
    let (x, y) = (word(a), word(b));
    let d = x ^ y;
    if d != 0 {
        return (d.trailing_zeros() / 8) as usize;
    }
    8 + count_rest(hay, a + 8, b + 8)
}

/// [`count_equal`] past its first eight bytes: both runs as slices to the end of `hay`,
/// compared in 8-byte pieces (no check a piece: `a`'s run, the shorter, ends the zip), the
/// last bytes one by one.
#[allow(clippy::arithmetic_side_effects)] // lengths within `hay`
fn count_rest(hay: &[u8], a: usize, b: usize) -> usize {
    let (Some(x), Some(y)) = (hay.get(a..), hay.get(b..)) else {
        return 0;
    };
    let mut k = 0usize;
    for (p, q) in x.chunks_exact(8).zip(y.chunks_exact(8)) {
        let d = u64::from_le_bytes(p.try_into().unwrap_or_default())
            ^ u64::from_le_bytes(q.try_into().unwrap_or_default());
        if d != 0 {
            return k + (d.trailing_zeros() / 8) as usize;
        }
        k += 8;
    }
    k + x
        .iter()
        .skip(k)
        .zip(y.iter().skip(k))
        .take_while(|(p, q)| p == q)
        .count()
}

/// A position table: 2^13 16-bit entries for inputs under 64 KiB (13-bit hashes, positions
/// below 2^16), 2^12 32-bit entries above: 16 KiB either way, as liblz4's state, zeroed for
/// every block. The hashes are masked to the table's size, so indexing it needs no check.
trait Table {
    fn at(&self, h: usize) -> usize;
    fn set(&mut self, h: usize, p: usize);
}

const SMALL_SLOTS: usize = 1 << (HASH_LOG + 1);
const LARGE_SLOTS: usize = 1 << HASH_LOG;

impl Table for [u16; SMALL_SLOTS] {
    #[inline(always)]
    fn at(&self, h: usize) -> usize {
        self.get(h & (SMALL_SLOTS - 1))
            .map_or(0, |&v| usize::from(v))
    }
    #[inline(always)]
    fn set(&mut self, h: usize, p: usize) {
        if let Some(slot) = self.get_mut(h & (SMALL_SLOTS - 1)) {
            *slot = p as u16;
        }
    }
}

impl Table for [u32; LARGE_SLOTS] {
    #[inline(always)]
    fn at(&self, h: usize) -> usize {
        self.get(h & (LARGE_SLOTS - 1)).map_or(0, |&v| v as usize)
    }
    #[inline(always)]
    fn set(&mut self, h: usize, p: usize) {
        if let Some(slot) = self.get_mut(h & (LARGE_SLOTS - 1)) {
            *slot = p as u32;
        }
    }
}

/// liblz4's hash of the sequence at the start of `seq` (its next 8 bytes, little-endian) for
/// the block's size class: 4 bytes to 13 bits below 64 KiB, 5 bytes to 12 bits above.
#[inline(always)]
fn hash<const SMALL: bool>(seq: u64) -> usize {
    if SMALL {
        ((seq as u32).wrapping_mul(2_654_435_761) >> (32 - (HASH_LOG + 1))) as usize
    } else {
        ((seq << 24).wrapping_mul(889_523_592_379) >> (64 - HASH_LOG)) as usize
    }
}

/// Compress `src` (at most [`MAX_INPUT`] bytes) into one LZ4 block appended to `out`, as
/// liblz4's `LZ4_compress_default` does.
pub fn compress_block(src: &[u8], out: &mut Vec<u8>) {
    let start = out.len();
    let end = compress_block_at(src, out, start);
    out.truncate(end);
}

/// The longest input the compressor looks for matches in: its positions are 32-bit (see
/// [`pos`]). The filter's chunks stay below it ([`compress_at`] refuses larger ones); a larger
/// block given to [`compress_block`] is written as literals alone.
const MAX_MATCHED: usize = i32::MAX as usize;

/// `src` as a block of one sequence of literals and no match (valid LZ4 at any length) at
/// `out[..]`, which has the worst case's room: its length.
fn literals_only(src: &[u8], out: &mut [u8]) -> usize {
    let n = src.len();
    put_byte(out, 0, (n.min(RUN_MASK) as u8) << 4);
    let mut op = 1;
    if n >= RUN_MASK {
        put_length(out, &mut op, n.saturating_sub(RUN_MASK));
    }
    if let Some(d) = out.get_mut(op..op.saturating_add(n)) {
        d.copy_from_slice(src);
    }
    op.saturating_add(n)
}

/// [`compress_block`] at `out[at..]`: the block's end. `out` grows to the worst case past `at`
/// where it is shorter, zeroing only the bytes it adds, and is never shortened: bytes an
/// earlier chunk left past the block stay as they were, so a buffer kept across chunks is not
/// zeroed again for each one (the caller knows where its bytes end).
pub fn compress_block_at(src: &[u8], out: &mut Vec<u8>, at: usize) -> usize {
    let n = src.len();
    // liblz4's LZ4_compressBound: no block is longer.
    let end = at.saturating_add(n.saturating_add(n / 255).saturating_add(16));
    if out.len() < end {
        out.resize(end, 0);
    }
    let buf = out.get_mut(at..end).unwrap_or_default();
    let written = if n > MAX_MATCHED {
        literals_only(src, buf)
    } else if n < LIMIT_64K {
        let mut table = [0u16; SMALL_SLOTS];
        compress_with::<true, _>(src, &mut table, buf)
    } else {
        let mut table = [0u32; LARGE_SLOTS];
        compress_with::<false, _>(src, &mut table, buf)
    };
    at.saturating_add(written)
}

/// Probe forward from `ip` (whose bytes are `forward_seq`) for a match, faster the longer
/// nothing matches, as liblz4: the match's position and its earlier occurrence, or `None` at
/// the end of the block. `probe` ends 8 bytes after the last position a match may start at,
/// so the read of the next position's bytes is the end-of-block test.
///
/// Not inlined: alone, the loop keeps all it needs in registers (inlined into the
/// compressor, the limit and the hash constant were reloaded on every probe).
#[inline(never)]
#[allow(clippy::arithmetic_side_effects)] // positions below 2^32
fn find_match<const SMALL: bool, T: Table>(
    probe: &[u8],
    t: &mut T,
    mut ip: usize,
    mut forward_seq: u64,
) -> Option<(usize, usize)> {
    let mut forward_ip = ip;
    let mut step = 1usize;
    let mut searches = 1usize << SKIP_TRIGGER;
    loop {
        let seq = forward_seq;
        let h = hash::<SMALL>(seq);
        ip = forward_ip;
        forward_ip += step;
        step = searches >> SKIP_TRIGGER;
        searches += 1;
        let f = pos(forward_ip);
        let next = probe.get(f..f + 8).and_then(|w| w.first_chunk::<8>())?;
        let m = t.at(h);
        forward_seq = u64::from_le_bytes(*next);
        t.set(h, ip);
        // The candidate is an earlier position, before `f`, where `probe` was just found to
        // hold a word: clamped to `f` (which changes nothing), its read needs no check.
        let candidate = probe
            .get(m.min(f)..)
            .and_then(|w| w.first_chunk::<4>())
            .map_or(0, |w| u32::from_le_bytes(*w));
        if (SMALL || m + DISTANCE_MAX >= ip) && candidate == seq as u32 {
            return Some((ip, m));
        }
    }
}

/// The little-endian word at `w[at..at + 8]` (`at` a constant: no check remains).
#[inline(always)]
fn word_in<const N: usize>(w: &[u8; N], at: usize) -> u64 {
    w.get(at..)
        .and_then(|s| s.first_chunk::<8>())
        .map_or(0, |b| u64::from_le_bytes(*b))
}

/// [`follow`] writes matches while this many bytes remain past `ip`: its window runs from
/// `ip - 2` to the second count word's end at `ip + 20`, itself within the last-literals margin.
const FOLLOW_MARGIN: usize = 20 + LASTLITERALS;

/// Matches straight after another (no literals between), from `ip` on, while
/// [`FOLLOW_MARGIN`] bytes remain past `ip`: the output's and the input's positions where the
/// run stops (no match at `ip`, its table entries made; or too near the end, none made).
///
/// Every test reads one window of the input, from `ip - 2` (the table's extra entry) to the
/// end of the second count word: one check, which is the loop's end test. The candidate's 20
/// bytes end before the window's (`candidate < ip`). Positions are `u32` (inputs are below
/// 2^31 bytes), which spares the truncations [`pos`] costs.
#[inline(always)]
#[allow(clippy::arithmetic_side_effects)] // positions below 2^31, lengths below 2^32
fn follow<const SMALL: bool, T: Table>(
    src: &[u8],
    hay: &[u8],
    t: &mut T,
    out: &mut [u8],
    op: usize,
    ip: usize,
) -> (usize, usize) {
    // `ip` follows a match: at least 4, so `ip - 2` does not wrap. (Were it below 2, `at`
    // would be past `last_at` and the run would stop at once, only with the wrong `ip`.)
    let mut at = ip.wrapping_sub(2) as u32;
    let mut op = op as u32;
    let Some(last_at) = src.len().checked_sub(FOLLOW_MARGIN + 2) else {
        return (op as usize, ip);
    };
    loop {
        let a = at as usize;
        let ip = a + 2;
        if a > last_at {
            return (op as usize, ip);
        }
        let Some(w) = src
            .get(a..a + FOLLOW_MARGIN + 2)
            .and_then(|w| w.first_chunk::<{ FOLLOW_MARGIN + 2 }>())
        else {
            return (op as usize, ip);
        };
        let seq = word_in(w, 2);
        t.set(hash::<SMALL>(word_in(w, 0)), a);
        let h = hash::<SMALL>(seq);
        let candidate = t.at(h);
        t.set(h, ip);
        // Table entries are earlier positions, so `offset` is at least 1, and liblz4's
        // distance test (`candidate + DISTANCE_MAX >= ip`) is `offset <= DISTANCE_MAX`. It
        // also says `candidate <= ip`, from which the compiler drops the check of the
        // candidate's read below (with the smaller table, which has no distance test, the
        // check stays).
        let offset = ip.wrapping_sub(candidate);
        if !SMALL && offset > DISTANCE_MAX {
            return (op as usize, ip);
        }
        let c = candidate as u32 as usize;
        let Some(cw) = src.get(c..c + 20).and_then(|w| w.first_chunk::<20>()) else {
            return (op as usize, ip);
        };
        if word_in(cw, 0) as u32 != seq as u32 {
            return (op as usize, ip);
        }
        // The length, as liblz4's count: the first eight bytes after the first four end
        // most matches, the next eight most of the rest (both within the window, and within
        // `match_limit`); longer ones counted on.
        let y = word_in(w, 6) ^ word_in(cw, 4);
        let len = if y != 0 {
            y.trailing_zeros() / 8
        } else {
            let z = word_in(w, 14) ^ word_in(cw, 12);
            if z != 0 {
                8 + z.trailing_zeros() / 8
            } else {
                16 + count_rest(hay, ip + 20, c + 20) as u32
            }
        };
        op = put_match(out, op as usize, offset, len as usize) as u32;
        at += len + MINMATCH as u32;
    }
}

/// A match straight after another within the last [`FOLLOW_MARGIN`] bytes before the block's
/// end (where [`follow`]'s window does not fit), with every read checked: the output's and
/// the input's next positions, or `None` when no match follows at `ip` (or `ip` is past the
/// last position a match may start at).
#[inline(never)]
#[allow(clippy::arithmetic_side_effects)] // positions below 2^32
fn follow_tail<const SMALL: bool, T: Table>(
    src: &[u8],
    t: &mut T,
    out: &mut [u8],
    op: usize,
    ip: usize,
) -> Option<(usize, usize)> {
    let n = src.len();
    if ip + MFLIMIT > n || ip < 2 {
        return None;
    }
    let match_limit = n - LASTLITERALS;
    let hay = src.get(..match_limit)?;
    t.set(hash::<SMALL>(read64(src, ip - 2)), ip - 2);
    let seq = read64(src, ip);
    let h = hash::<SMALL>(seq);
    let candidate = t.at(h);
    t.set(h, ip);
    let c4 = src.get(candidate..candidate + 4)?.first_chunk::<4>()?;
    if !((SMALL || candidate + DISTANCE_MAX >= ip) && u32::from_le_bytes(*c4) == seq as u32) {
        return None;
    }
    let len = count_equal(hay, ip + MINMATCH, candidate + MINMATCH);
    Some((put_match(out, op, ip - candidate, len), ip + len + MINMATCH))
}

/// [`compress_block`] with the table of the input's size class, into `out` (as long as the
/// worst case); returns the block's length.
///
/// Positions are indexes into `src`, whose length is below 2^31, so the arithmetic on them does
/// not overflow; the reads and writes go through `get`.
#[allow(clippy::arithmetic_side_effects)]
#[inline(always)]
fn compress_with<const SMALL: bool, T: Table>(src: &[u8], t: &mut T, out: &mut [u8]) -> usize {
    let n = src.len();
    let mut anchor = 0usize;
    let mut op = 0usize;
    if n > MFLIMIT {
        let mflimit_plus_one = n - MFLIMIT + 1;
        let match_limit = n - LASTLITERALS;
        t.set(hash::<SMALL>(read64(src, 0)), 0);
        let mut ip = 1usize;
        let mut forward_seq = read64(src, ip);
        let probe = src.get(..mflimit_plus_one + 8).unwrap_or_default();
        // Matches end `LASTLITERALS` before the end at the latest.
        let hay = src.get(..match_limit).unwrap_or_default();
        'main: loop {
            let Some((found, candidate)) = find_match::<SMALL, T>(probe, t, ip, forward_seq) else {
                break 'main;
            };
            ip = found;
            let mut m = candidate;
            // Extend the match backwards over equal bytes, not past the literals' start.
            while ip > anchor && m > 0 && byte(src, ip - 1) == byte(src, m - 1) {
                ip -= 1;
                m -= 1;
            }
            // The sequence with its literals, then as long as the next position matches at
            // once, matches without literals.
            let len = count_equal(hay, ip + MINMATCH, m + MINMATCH);
            op = put_sequence(out, op, src, (anchor, ip - anchor), ip - m, len);
            ip += len + MINMATCH;
            loop {
                // Most matches follow another at once (the detector's zero-heavy frames: 99.7%
                // of sequences): `follow` writes them while 25 bytes remain past `ip`,
                // `follow_tail` nearer the end.
                (op, ip) = follow::<SMALL, T>(src, hay, t, out, op, ip);
                anchor = ip;
                if ip + FOLLOW_MARGIN <= n {
                    break;
                }
                match follow_tail::<SMALL, T>(src, t, out, op, ip) {
                    Some((next_op, next_ip)) => (op, ip) = (next_op, next_ip),
                    None if ip >= mflimit_plus_one => break 'main,
                    None => break,
                }
            }
            ip += 1;
            forward_seq = read64(src, ip);
        }
    }
    let last = n - anchor;
    let token_at = op;
    op += 1;
    if last >= RUN_MASK {
        put_byte(out, token_at, (RUN_MASK << 4) as u8);
        put_length(out, &mut op, last - RUN_MASK);
    } else {
        put_byte(out, token_at, (last << 4) as u8);
    }
    put_literals(out, op, src, anchor, last);
    op + last
}

/// A literal or match length: `base` (the token's 4 bits), continued by bytes while they are
/// 255 when it is 15.
#[inline(always)]
fn length(src: &[u8], ip: &mut usize, base: usize) -> Result<usize, &'static str> {
    let mut len = base;
    if base == 15 {
        loop {
            let b = *src.get(*ip).ok_or("truncated block")?;
            *ip = ip.checked_add(1).ok_or("truncated block")?;
            len = len.checked_add(usize::from(b)).ok_or("length overflows")?;
            if b != 255 {
                break;
            }
        }
    }
    Ok(len)
}

/// Copy `len` bytes from `from` to `to` (`from < to`) in `out` as LZ4 does, one byte after
/// another, so that a match overlapping its output repeats the last `to - from` bytes.
/// The caller checked `to + len <= out.len()`.
#[inline(always)]
#[allow(clippy::arithmetic_side_effects)] // positions and lengths within `out`
fn copy_match(out: &mut [u8], from: usize, to: usize, len: usize) {
    let offset = to - from;
    if offset >= 16 {
        // Sixteen bytes at a time: each piece's source ends before its destination starts.
        let mut k = 0;
        while k + 16 <= len {
            out.copy_within(from + k..from + k + 16, to + k);
            k += 16;
        }
        out.copy_within(from + k..from + len, to + k);
    } else if len <= 16 {
        for k in 0..len {
            if let Some(&b) = out.get(from + k)
                && let Some(d) = out.get_mut(to + k)
            {
                *d = b;
            }
        }
    } else {
        // A short repeating pattern: copy what is already periodic, doubling each time (the
        // source, a whole number of periods, ends where the destination starts).
        let mut done = 0;
        while done < len {
            let k = (done + offset).min(len - done);
            out.copy_within(from..from + k, to + done);
            done += k;
        }
    }
}

/// The fast loop's tables, in one place so that the loop keeps one base address for both.
struct FastTables {
    /// The output a token's sequence makes (literals and match) when the fast loop decodes it
    /// (both lengths within the token), else 0.
    advance: [u8; 256],
    /// For a match repeating a pattern of `offset` bytes (1 to 7): the mask of the pattern's
    /// bytes in a word; the factor that repeats them over 8 bytes (a copy past the 8th byte
    /// falls off); and the whole periods in 8 bytes, how far on the repeated word, written
    /// again, continues the pattern.
    patterns: [(u64, u64, usize); 8],
}

/// [`FastTables::advance`], built at compile time (an index out of bounds fails the build).
#[allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]
const fn fast_advance() -> [u8; 256] {
    let mut t = [0u8; 256];
    let mut token = 0;
    while token < 0xf0 {
        if token & 0x0f != 0x0f {
            t[token] = (token >> 4) as u8 + (token & 0x0f) as u8 + MINMATCH as u8;
        }
        token += 1;
    }
    t
}

static FAST: FastTables = FastTables {
    advance: fast_advance(),
    patterns: [
        (0, 0, 8),
        (0xff, 0x0101_0101_0101_0101, 8),
        (0xffff, 0x0001_0001_0001_0001, 8),
        (0xff_ffff, 0x0001_0000_0100_0001, 6),
        (0xffff_ffff, 0x0000_0001_0000_0001, 8),
        (0xff_ffff_ffff, 0x0000_0100_0000_0001, 5),
        (0xffff_ffff_ffff, 0x0001_0000_0000_0001, 6),
        (0xff_ffff_ffff_ffff, 0x0100_0000_0000_0001, 7),
    ],
};

/// The output room the fast loop asks past a sequence's start: 14 literals, then a match's
/// 24 bytes (18, or a pattern's three words) and slack.
const FAST_ROOM: usize = 64;

/// The fast loop's output window at `op`.
#[inline(always)]
#[allow(clippy::arithmetic_side_effects)] // `op <= out.len() - FAST_ROOM`
fn window(out: &mut [u8], op: usize) -> Option<&mut [u8; FAST_ROOM]> {
    out.get_mut(op..op + FAST_ROOM)
        .and_then(|w| w.first_chunk_mut::<FAST_ROOM>())
}

/// `N` bytes into `w` at `k` (within it: `k` is below `FAST_ROOM - N`).
#[inline(always)]
fn put<const N: usize>(w: &mut [u8; FAST_ROOM], k: usize, v: [u8; N]) {
    if let Some(d) = w.get_mut(k..).and_then(|d| d.first_chunk_mut::<N>()) {
        *d = v;
    }
}

/// The 18 bytes of a match source at `from` (`from <= out.len() - 18`).
#[inline(always)]
#[allow(clippy::arithmetic_side_effects)] // `from <= out.len() - 18`
fn source(out: &[u8], from: usize) -> [u8; 18] {
    out.get(from..from + 18)
        .and_then(|s| s.first_chunk::<18>())
        .copied()
        .unwrap_or([0; 18])
}

/// Decode sequences from `ip` to `op` while they are the common kind: lengths in the token,
/// away from both ends (18 bytes of input and [`FAST_ROOM`] of output), a match not before the
/// block's start. Such a sequence moves its literals as one 16-byte copy and its match as 8,
/// 8 and 2 bytes, each piece read after the one before it is written (an offset of 8 or more
/// then repeats its pattern as a byte-by-byte copy does), or, for an offset of 1 to 7, as a
/// register word of the repeated pattern stored three times a whole number of periods apart;
/// the bytes written past a length are overwritten by the next sequence. A match of 19 to 34
/// bytes (one length byte after the token's 15) goes the same way in twice the pieces
/// ([`long_in_window`]). Returns where it stopped: the caller decodes the next sequence,
/// whatever it is, with every check.
#[inline(never)]
#[allow(clippy::arithmetic_side_effects)] // positions below the buffers' lengths (below 2^32)
fn decode_short(src: &[u8], out: &mut [u8], mut ip: usize, mut op: usize) -> (usize, usize) {
    // `ip <= last_in` leaves 18 bytes of input, `op <= last` FAST_ROOM of output; a match
    // source `from <= last_from` leaves 18.
    let (Some(last_in), Some(last), Some(last_from)) = (
        src.len().checked_sub(18),
        out.len().checked_sub(FAST_ROOM),
        out.len().checked_sub(18),
    ) else {
        return (ip, op);
    };
    while ip <= last_in && op <= last {
        // The token, up to 14 literals and the offset are within these 18 bytes.
        let Some(w) = src.get(ip..ip + 18).and_then(|w| w.first_chunk::<18>()) else {
            break;
        };
        let [token, ..] = *w;
        let advance = usize::from(FAST.advance.get(usize::from(token)).copied().unwrap_or(0));
        if advance == 0 {
            match long_in_window(w, out, op, last_from) {
                Some((i, o)) => (ip, op) = (ip + i, o),
                None => break,
            }
            continue;
        }
        let lits = usize::from(token >> 4);
        let lo = w.get(1 + lits).copied().unwrap_or(0);
        let hi = w.get(2 + lits).copied().unwrap_or(0);
        let offset = usize::from(u16::from_le_bytes([lo, hi]));
        // Wraps past `last_from` when the offset reaches before the block's start.
        let from = (op + lits).wrapping_sub(offset);
        if from > last_from {
            break;
        }
        // Sixteen bytes from the window (read from memory straight into the store: taking
        // them out of a copy of the whole window cost two instructions more).
        let l = w.get(1..).and_then(|l| l.first_chunk::<16>());
        if let (Some(d), Some(&l)) = (window(out, op), l) {
            put(d, 0, l);
        }
        if offset >= 8 {
            // Each piece is read after the one before it is written.
            let [a @ .., _, _, _, _, _, _, _, _, _, _] = source(out, from);
            if let Some(d) = window(out, op) {
                put(d, lits, a);
            }
            let [_, _, _, _, _, _, _, _, b @ .., _, _] = source(out, from);
            if let Some(d) = window(out, op) {
                put(d, lits + 8, b);
            }
            let [_, _, _, _, _, _, _, _, _, _, _, _, _, _, _, _, c @ ..] = source(out, from);
            if let Some(d) = window(out, op) {
                put(d, lits + 16, c);
            }
        } else {
            if offset == 0 {
                break;
            }
            let (low, repeat, step) = FAST.patterns.get(offset & 7).copied().unwrap_or_default();
            let [x @ .., _, _, _, _, _, _, _, _, _, _] = source(out, from);
            let word = (u64::from_le_bytes(x) & low)
                .wrapping_mul(repeat)
                .to_le_bytes();
            // Below 16 (8 at most): the third word ends within the window.
            let step = step & 15;
            if let Some(d) = window(out, op) {
                put(d, lits, word);
                put(d, lits + step, word);
                put(d, lits + 2 * step, word);
            }
        }
        ip += 1 + lits + 2;
        op += advance;
    }
    (ip, op)
}

/// The sequence in `w`, at `op` (with FAST_ROOM bytes of room), when its literals are in
/// the token and its match takes one length byte more, below 16 (19 to 34 bytes): as the fast
/// loop's, with the match's pieces at 16 to 34 read and written as those at 0 to 18. The input
/// it took and the output position after it; `None` for any other sequence (having written
/// nothing the checked path does not write again). Kept out of the common sequence's code:
/// with its own copies of the token's fields the common path keeps its registers (decoding
/// these in the same body as the common sequence cost that one two instructions more).
#[inline(always)]
#[allow(clippy::arithmetic_side_effects)] // positions within the window
fn long_in_window(
    w: &[u8; 18],
    out: &mut [u8],
    op: usize,
    last_from: usize,
) -> Option<(usize, usize)> {
    let [token, ..] = *w;
    let lits = usize::from(token >> 4);
    let more = usize::from(*w.get(3 + lits)?);
    if lits == 15 || token & 0x0f != 0x0f || more > 15 {
        return None;
    }
    let offset = usize::from(u16::from_le_bytes([*w.get(1 + lits)?, *w.get(2 + lits)?]));
    let from = (op + lits).wrapping_sub(offset);
    // The second half's source, 16 bytes on, leaves 18 bytes too (`last_from` is at least
    // FAST_ROOM - 18).
    if from > last_from - 16 || offset == 0 {
        return None;
    }
    let l = *w.get(1..)?.first_chunk::<16>()?;
    put(window(out, op)?, 0, l);
    if offset >= 8 {
        for k in [0, 16] {
            let [a @ .., _, _, _, _, _, _, _, _, _, _] = source(out, from + k);
            put(window(out, op)?, lits + k, a);
            let [_, _, _, _, _, _, _, _, b @ .., _, _] = source(out, from + k);
            put(window(out, op)?, lits + k + 8, b);
        }
        let [_, _, _, _, _, _, _, _, _, _, _, _, _, _, _, _, c @ ..] = source(out, from + 16);
        put(window(out, op)?, lits + 32, c);
    } else {
        let (low, repeat, step) = FAST.patterns.get(offset)?;
        let [x @ .., _, _, _, _, _, _, _, _, _, _] = source(out, from);
        let word = (u64::from_le_bytes(x) & low)
            .wrapping_mul(*repeat)
            .to_le_bytes();
        let step = (*step).max(1);
        let d = window(out, op)?;
        let mut k = 0;
        while k < 34 {
            put(d, lits + k, word);
            k += step;
        }
    }
    Some((1 + lits + 3, op + lits + 15 + MINMATCH + more))
}

/// Decode one LZ4 block that must fill `out` exactly.
///
/// Short literals and matches (the common case, away from both ends) move as one 16-byte copy,
/// as liblz4's decoder does; every position is checked against both buffers.
#[allow(clippy::arithmetic_side_effects)] // positions below the buffers' lengths; lengths checked
pub fn decompress_block_into(src: &[u8], out: &mut [u8]) -> Result<(), &'static str> {
    let (n_in, n_out) = (src.len(), out.len());
    let mut ip = 0usize;
    let mut op = 0usize;
    loop {
        // A sequence of 15 literals or more never takes the fast loop: not calling it saves
        // its entry and exit (a block of mostly literals has one such sequence after another).
        if src.get(ip).is_some_and(|&token| token < 0xf0) {
            (ip, op) = decode_short(src, out, ip, op);
        }
        let token = usize::from(*src.get(ip).ok_or("truncated block")?);
        ip += 1;
        let lits = token >> 4;
        if lits < 15 && ip + 16 <= n_in && op + 16 <= n_out {
            // Copies 16 bytes, keeps `lits`: the rest is overwritten or past the end.
            if let (Some(d), Some(s)) = (out.get_mut(op..op + 16), src.get(ip..ip + 16)) {
                d.copy_from_slice(s);
            }
        } else {
            let lits = length(src, &mut ip, lits)?;
            let end_in = ip.checked_add(lits).filter(|&e| e <= n_in);
            let end_out = op.checked_add(lits).filter(|&e| e <= n_out);
            let (Some(end_in), Some(end_out)) = (end_in, end_out) else {
                return Err("literals past the end of the block or output");
            };
            if let (Some(d), Some(s)) = (out.get_mut(op..end_out), src.get(ip..end_in)) {
                d.copy_from_slice(s);
            }
            ip = end_in;
            op = end_out;
            if ip == n_in {
                break;
            }
            let (offset, len) = match_of(src, &mut ip, token)?;
            copy_checked(out, &mut op, offset, len)?;
            continue;
        }
        ip += lits;
        op += lits;
        if ip == n_in {
            break;
        }
        let (offset, len) = match_of(src, &mut ip, token)?;
        copy_checked(out, &mut op, offset, len)?;
    }
    if op != n_out {
        return Err("block decodes short of the expected size");
    }
    Ok(())
}

/// The offset and length of the match after a sequence's literals.
#[inline(always)]
#[allow(clippy::arithmetic_side_effects)] // `ip` below `src.len()`
fn match_of(src: &[u8], ip: &mut usize, token: usize) -> Result<(usize, usize), &'static str> {
    let o = src
        .get(*ip..)
        .and_then(|s| s.first_chunk::<2>())
        .ok_or("truncated block")?;
    let offset = usize::from(u16::from_le_bytes(*o));
    *ip += 2;
    let len = length(src, ip, token & 0x0f)?
        .checked_add(MINMATCH)
        .ok_or("length overflows")?;
    Ok((offset, len))
}

/// Copy a match of `len` bytes `offset` back, to `op`, checked against `out`.
#[inline(always)]
#[allow(clippy::arithmetic_side_effects)] // checked just before
fn copy_checked(
    out: &mut [u8],
    op: &mut usize,
    offset: usize,
    len: usize,
) -> Result<(), &'static str> {
    if offset == 0 || offset > *op {
        return Err("match before the start of the block");
    }
    if op.checked_add(len).is_none_or(|e| e > out.len()) {
        return Err("block decodes past the expected size");
    }
    let from = *op - offset;
    let to = *op;
    if to + len + 16 <= out.len() {
        // Room for whole 8- or 16-byte pieces past the match's end (overwritten later).
        if offset >= 16 {
            let mut k = 0;
            while k < len {
                out.copy_within(from + k..from + k + 16, to + k);
                k += 16;
            }
        } else if offset >= 8 {
            let mut k = 0;
            while k < len {
                out.copy_within(from + k..from + k + 8, to + k);
                k += 8;
            }
        } else {
            // The first eight bytes are the `offset`-byte pattern repeated; after them, each
            // 8-byte piece comes from a whole number of periods back, at least 8.
            let x = out
                .get(from..)
                .and_then(|s| s.first_chunk::<8>())
                .map_or(0, |b| u64::from_le_bytes(*b));
            let mut w = x & ((1u64 << (8 * offset)) - 1);
            let mut filled = offset;
            while filled < 8 {
                w |= w << (8 * filled);
                filled *= 2;
            }
            if let Some(d) = out.get_mut(to..to + 8) {
                d.copy_from_slice(&w.to_le_bytes());
            }
            // The smallest whole number of periods of at least 8 bytes (a table: the
            // division it stands for cost more than the rest of the sequence).
            const BACK: [usize; 8] = [8, 8, 8, 9, 8, 10, 12, 14];
            let back = BACK.get(offset).copied().unwrap_or(8);
            let mut k = 8;
            while k < len {
                let src = to + k - back;
                out.copy_within(src..src + 8, to + k);
                k += 8;
            }
        }
    } else {
        copy_match(out, from, to, len);
    }
    *op += len;
    Ok(())
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
    let mut out = Vec::new();
    let end = compress_at(data, block_size, &mut out, 0)?;
    out.truncate(end);
    Ok(out)
}

/// [`compress`] at `out[at..]`: the chunk's end. As [`compress_block_at`], `out` grows where
/// it is shorter than the worst case and is never shortened (bytes past the chunk are an
/// earlier chunk's).
pub fn compress_at(
    data: &[u8],
    block_size: u32,
    out: &mut Vec<u8>,
    at: usize,
) -> Result<usize, FilterError> {
    let n = data.len();
    if n > i32::MAX as usize {
        return Err(corrupt("the filter compresses chunks below 2 GiB"));
    }
    let block = match block_size as usize {
        0 => DEFAULT_FILTER_BLOCK,
        b => b,
    }
    .min(n);
    let worst = at.saturating_add(n.saturating_add(n / 255).saturating_add(64));
    out.reserve(worst.saturating_sub(out.len()));
    let mut end = crate::put(out, at, &(n as u64).to_be_bytes());
    end = crate::put(out, end, &(block as u32).to_be_bytes());
    for raw in data.chunks(block.max(1)) {
        // Compressed in place after its length; stored raw instead when LZ4 does not shrink it.
        let len_at = end;
        let body = len_at.saturating_add(4);
        end = compress_block_at(raw, out, body);
        let mut len = end.saturating_sub(body);
        if len >= raw.len() {
            end = crate::put(out, body, raw);
            len = raw.len();
        }
        crate::put(out, len_at, &(len as u32).to_be_bytes());
    }
    Ok(end)
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
    fn roundtrip_repeating_patterns_of_every_short_period() {
        // Matches that overlap their own output (offset below the length), of every offset
        // the decoder copies differently (under 16, 16 and more) and lengths around 16.
        for period in 1..=40usize {
            for run in [5usize, 15, 16, 17, 40, 1000] {
                let mut data: Vec<u8> = (0..300u32)
                    .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
                    .collect();
                let pattern: Vec<u8> = (0..period).map(|i| (i * 37 + period) as u8).collect();
                data.extend(pattern.iter().cycle().take(period + run));
                data.extend((0..50u32).map(|i| (i.wrapping_mul(40_503) >> 7) as u8));
                let mut c = Vec::new();
                compress_block(&data, &mut c);
                let mut d = vec![0u8; data.len()];
                decompress_block_into(&c, &mut d).unwrap();
                assert_eq!(d, data, "period {period} run {run}");
            }
        }
    }

    /// Matches repeating a pattern of 1 to 7 bytes (shorter offset than length), of every
    /// length the token holds, amid random bytes: the decoder's fast path writes them from one
    /// register word (the pattern stored a whole number of periods apart), which must equal
    /// the byte-by-byte repetition for every offset and length.
    #[test]
    fn decode_short_patterns_of_every_offset_and_length() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut rnd = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        };
        let mut data: Vec<u8> = (0..64).map(|_| rnd()).collect();
        for offset in 1..8usize {
            for len in MINMATCH + 1..=18 {
                let pattern: Vec<u8> = (0..offset).map(|_| rnd()).collect();
                data.extend(pattern.iter().cycle().take(offset + len));
                // Few literals before the next run: its sequence stays on the fast path.
                data.extend((0..4).map(|_| rnd()));
            }
        }
        let mut c = Vec::new();
        compress_block(&data, &mut c);
        let seqs = sequences(&c);
        for offset in 1..8 {
            assert!(
                seqs.iter()
                    .any(|&(_, lits, _, l, o)| lits < 15 && o == offset && l > offset && l <= 18),
                "no match of offset {offset} shorter than 19 bytes"
            );
        }
        let mut d = vec![0u8; data.len()];
        decompress_block_into(&c, &mut d).unwrap();
        assert_eq!(d, data);
    }

    /// LZ4 block decoding written plainly (a byte at a time, every check spelled out): the
    /// model the tuned decoder must equal on any input, valid or not. `None` where it must
    /// fail: literals or a match past the block or the output, an offset of 0 or before the
    /// start, a block ending after a match or short of `n` bytes.
    fn reference_decode(block: &[u8], n: usize) -> Option<Vec<u8>> {
        let length = |ip: &mut usize, mut len: usize| -> Option<usize> {
            if len == 15 {
                loop {
                    let b = *block.get(*ip)?;
                    *ip += 1;
                    len += b as usize;
                    if b != 255 {
                        break;
                    }
                }
            }
            Some(len)
        };
        let (mut ip, mut out) = (0, Vec::new());
        loop {
            let token = *block.get(ip)? as usize;
            ip += 1;
            let lits = length(&mut ip, token >> 4)?;
            let s = block.get(ip..ip + lits)?;
            if out.len() + lits > n {
                return None;
            }
            out.extend_from_slice(s);
            ip += lits;
            if ip == block.len() {
                break;
            }
            let o = block.get(ip..ip + 2)?;
            let offset = u16::from_le_bytes([o[0], o[1]]) as usize;
            ip += 2;
            let len = length(&mut ip, token & 15)? + MINMATCH;
            if offset == 0 || offset > out.len() || out.len() + len > n {
                return None;
            }
            for _ in 0..len {
                out.push(out[out.len() - offset]);
            }
        }
        (out.len() == n).then_some(out)
    }

    /// Our decoder on `block` into `n` bytes (first filled with a byte the data rarely has, so
    /// a byte the decoder leaves unwritten shows), as the model's `Option`.
    fn decode(block: &[u8], n: usize) -> Option<Vec<u8>> {
        let mut d = vec![0xa5u8; n];
        decompress_block_into(block, &mut d).ok().map(|()| d)
    }

    /// Test data of a few kinds: the detector's (little-endian u16 counts, mostly 0 to 2, with
    /// runs of zeros), periodic text with errors, random bytes, and short repeating patterns.
    fn kind_of_data(kind: u64, n: usize, rnd: &mut impl FnMut() -> u64) -> Vec<u8> {
        let mut v = Vec::with_capacity(n + 8);
        while v.len() < n {
            match kind % 4 {
                0 => {
                    let r = rnd();
                    let count: u16 = if r.is_multiple_of(64) {
                        (r >> 8) as u16 % 5000
                    } else if r.is_multiple_of(7) {
                        0
                    } else {
                        ((r >> 16) % 3) as u16
                    };
                    if r % 97 == 1 {
                        v.extend(std::iter::repeat_n(0u8, (r >> 24) as usize % 300));
                    }
                    v.extend(count.to_le_bytes());
                }
                1 => {
                    let r = rnd();
                    let i = v.len();
                    v.push(
                        b"the quick brown fox, jumps over the lazy dog. "[i % 46]
                            ^ u8::from(r.is_multiple_of(53)),
                    );
                }
                2 => v.push(rnd() as u8),
                _ => {
                    let r = rnd();
                    let period = 1 + (r % 20) as usize;
                    let pattern: Vec<u8> = (0..period).map(|_| rnd() as u8).collect();
                    v.extend(pattern.iter().cycle().take((r >> 8) as usize % 60));
                    v.extend((0..(r >> 16) % 6).map(|_| rnd() as u8));
                }
            }
        }
        v.truncate(n);
        v
    }

    /// A block written sequence by sequence: `(literals, offset, match length)` each (lengths
    /// in the token up to 14 literals and 18 match bytes, continued past), then `last` literals.
    fn block_of(seqs: &[(Vec<u8>, usize, usize)], last: &[u8]) -> Vec<u8> {
        let mut b = Vec::new();
        let length = |b: &mut Vec<u8>, mut len: usize| {
            while len >= 255 {
                b.push(255);
                len -= 255;
            }
            b.push(len as u8);
        };
        for (lits, offset, len) in seqs {
            let ml = len - MINMATCH;
            b.push(((lits.len().min(15) << 4) | ml.min(15)) as u8);
            if lits.len() >= 15 {
                length(&mut b, lits.len() - 15);
            }
            b.extend_from_slice(lits);
            b.extend_from_slice(&(*offset as u16).to_le_bytes());
            if ml >= 15 {
                length(&mut b, ml - 15);
            }
        }
        b.push((last.len().min(15) << 4) as u8);
        if last.len() >= 15 {
            length(&mut b, last.len() - 15);
        }
        b.extend_from_slice(last);
        b
    }

    /// Matches of every offset from 1 to 40 and every length from 4 to 40 bytes (in the token
    /// up to 18, one length byte more from 19; overlapping their output where the offset is
    /// shorter), after 0 to 14 literals, far from the block's ends: the fast loop's pieces
    /// (8-byte pieces each read after the one before is written, up to 18 or 34 bytes; a
    /// pattern's register word for offsets under 8), and the checked copy past 34 bytes, must
    /// equal the byte-by-byte repetition of the plain model for each.
    #[test]
    fn literal_only_blocks_decode_to_their_input_at_every_length_class() {
        // The form a block past the compressor's 2^31 bytes takes: token, the length's
        // continuation bytes (none, one, several, ending in 0 or 255 boundaries), the bytes.
        for n in [0usize, 1, 14, 15, 16, 269, 270, 271, 524, 525, 5000] {
            let src: Vec<u8> = (0..n).map(|i| (i * 7 + 3) as u8).collect();
            let mut out = vec![0u8; n + n / 255 + 16];
            let len = literals_only(&src, &mut out);
            assert_eq!(
                len,
                1 + usize::from(n >= 15) * (1 + (n - 15.min(n)) / 255) + n,
                "{n}"
            );
            let mut back = Vec::new();
            decompress_block(&out[..len], n, &mut back).unwrap();
            assert_eq!(back, src, "{n}");
        }
    }

    #[test]
    fn decode_fast_matches_of_every_offset_and_length() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut rnd = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        };
        let mut seqs = vec![((0..64).map(|_| rnd()).collect(), 64, 4)];
        let mut k = 0;
        for offset in 1..=40usize {
            for len in MINMATCH..=40 {
                let lits = (0..k % 15).map(|_| rnd()).collect();
                seqs.push((lits, offset, len));
                k += 1;
            }
        }
        let last: Vec<u8> = (0..100).map(|_| rnd()).collect();
        let block = block_of(&seqs, &last);
        let n = seqs.iter().map(|s| s.0.len() + s.2).sum::<usize>() + last.len();
        let expected = reference_decode(&block, n).unwrap();
        assert_eq!(decode(&block, n).unwrap(), expected);
        // The model repeats each match byte by byte (a spot check of the model itself).
        let (mut at, mut checked) = (0, 0);
        for (lits, offset, len) in &seqs {
            at += lits.len();
            for i in at..at + len {
                assert_eq!(expected[i], expected[i - offset]);
                checked += 1;
            }
            at += len;
        }
        assert_eq!(checked, seqs.iter().map(|s| s.2).sum::<usize>());
    }

    /// Valid blocks of every kind of data whose end falls at every distance from the fast
    /// loop's output margin (FAST_ROOM) and input margin (18 bytes), and past both: the
    /// decoder equals the data and the plain model; one byte more or less of output fails.
    #[test]
    fn decodes_as_the_plain_model_at_every_end_margin() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut rnd = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for kind in 0..4 {
            for base in [0usize, 40, 700] {
                let head = kind_of_data(kind, base, &mut rnd);
                for tail in 0..=FAST_ROOM + 40 {
                    let mut data = head.clone();
                    data.extend(kind_of_data(kind + 1, tail, &mut rnd));
                    let mut c = Vec::new();
                    compress_block(&data, &mut c);
                    let n = data.len();
                    assert_eq!(
                        decode(&c, n).as_ref(),
                        Some(&data),
                        "kind {kind} {base}+{tail}"
                    );
                    assert_eq!(reference_decode(&c, n).as_ref(), Some(&data));
                    assert!(decode(&c, n + 1).is_none());
                    if n > 0 {
                        assert!(decode(&c, n - 1).is_none());
                    }
                }
            }
        }
    }

    /// Valid blocks with bytes set to random or telling values (tokens of 15, offsets of 0,
    /// lengths of 255), bytes cut or inserted, decoded at the right size and off by a few: the
    /// decoder never panics, and succeeds exactly when the plain model does, with its bytes.
    #[test]
    fn mutated_blocks_decode_as_the_plain_model() {
        let mut x = 0xd1b5_4a32_d192_ed03u64;
        let mut rnd = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut agreed_ok = 0;
        for trial in 0..4000u64 {
            let n = (rnd() % 1500) as usize + if trial % 10 == 0 { 5000 } else { 0 };
            let data = kind_of_data(trial, n, &mut rnd);
            let mut c = Vec::new();
            compress_block(&data, &mut c);
            for _ in 0..1 + rnd() % 4 {
                if c.is_empty() {
                    break;
                }
                let at = (rnd() % c.len() as u64) as usize;
                match rnd() % 8 {
                    0 => c.truncate(at),
                    1 => c.insert(at, rnd() as u8),
                    2 => c[at] = [0x00, 0x0f, 0xf0, 0xff, 0x01][(rnd() % 5) as usize],
                    3 => {
                        c.remove(at);
                    }
                    _ => c[at] = rnd() as u8,
                }
            }
            let size = match rnd() % 4 {
                0 => n.saturating_sub((rnd() % 20) as usize),
                1 => n + (rnd() % 20) as usize,
                _ => n,
            };
            let ours = decode(&c, size);
            assert_eq!(ours, reference_decode(&c, size), "trial {trial}");
            agreed_ok += usize::from(ours.is_some());
        }
        // Not every mutation breaks a block (a changed literal decodes): both outcomes occur.
        assert!((100..3900).contains(&agreed_ok), "{agreed_ok} decoded");
    }

    /// LZ4_compress_default written plainly (byte reads, a Vec pushed to, one loop): the model
    /// the tuned compressor must equal. The `plugin_filters` interop test pins the tuned one to
    /// hdf5plugin's liblz4 chunks; this test finds a divergence on many more inputs without it.
    fn reference_block(src: &[u8]) -> Vec<u8> {
        let n = src.len();
        let small = n < LIMIT_64K;
        let r32 = |p: usize| u32::from_le_bytes(src[p..p + 4].try_into().unwrap());
        let hash = |p: usize| {
            if small {
                (r32(p).wrapping_mul(2_654_435_761) >> 19) as usize
            } else {
                let x = u64::from_le_bytes(src[p..p + 8].try_into().unwrap());
                ((x << 24).wrapping_mul(889_523_592_379) >> 52) as usize
            }
        };
        let mut table = vec![0usize; 1 << 13];
        let mut out = Vec::new();
        let length = |out: &mut Vec<u8>, mut len: usize| {
            while len >= 255 {
                out.push(255);
                len -= 255;
            }
            out.push(len as u8);
        };
        let mut anchor = 0;
        if n > MFLIMIT {
            let last_start = n - MFLIMIT; // a match starts at most here
            let match_limit = n - LASTLITERALS;
            table[hash(0)] = 0;
            let mut ip = 1;
            'main: loop {
                // Probe forward for a match, faster the longer none is found.
                let (mut searches, mut step) = (1usize << SKIP_TRIGGER, 1);
                let mut m;
                let mut next = ip;
                loop {
                    ip = next;
                    next = ip + step;
                    step = searches >> SKIP_TRIGGER;
                    searches += 1;
                    if next > last_start + 1 {
                        break 'main;
                    }
                    let h = hash(ip);
                    m = table[h];
                    table[h] = ip;
                    if (small || m + DISTANCE_MAX >= ip) && r32(m) == r32(ip) {
                        break;
                    }
                }
                while ip > anchor && m > 0 && src[ip - 1] == src[m - 1] {
                    ip -= 1;
                    m -= 1;
                }
                let lits = ip - anchor;
                let mut token_at = out.len();
                out.push((lits.min(15) << 4) as u8);
                if lits >= 15 {
                    length(&mut out, lits - 15);
                }
                out.extend_from_slice(&src[anchor..ip]);
                loop {
                    out.extend_from_slice(&((ip - m) as u16).to_le_bytes());
                    let mut len = 0;
                    while ip + 4 + len < match_limit && src[ip + 4 + len] == src[m + 4 + len] {
                        len += 1;
                    }
                    ip += len + 4;
                    out[token_at] |= len.min(15) as u8;
                    if len >= 15 {
                        length(&mut out, len - 15);
                    }
                    anchor = ip;
                    if ip > last_start {
                        break 'main;
                    }
                    table[hash(ip - 2)] = ip - 2;
                    let h = hash(ip);
                    let c = table[h];
                    table[h] = ip;
                    if (small || c + DISTANCE_MAX >= ip) && r32(c) == r32(ip) {
                        token_at = out.len();
                        out.push(0);
                        m = c;
                        continue;
                    }
                    break;
                }
                ip += 1;
            }
        }
        let lits = n - anchor;
        out.push((lits.min(15) << 4) as u8);
        if lits >= 15 {
            length(&mut out, lits - 15);
        }
        out.extend_from_slice(&src[anchor..]);
        out
    }

    #[test]
    fn equals_the_plain_model_on_many_inputs() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut rnd = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for trial in 0..3000 {
            let n = match trial % 100 {
                0 => LIMIT_64K - 2 + (rnd() % 4) as usize,
                1 => 70_000 + (rnd() % 100_000) as usize,
                _ => (rnd() % 2000) as usize,
            };
            let kind = rnd() % 4;
            let data: Vec<u8> = (0..n)
                .map(|i| match kind {
                    0 => ((i / 37) % 7) as u8 + (rnd() % 2) as u8,
                    1 => (rnd() % 4) as u8,
                    2 => (rnd() % 256) as u8,
                    _ => {
                        if i % 4 == 3 {
                            rnd() as u8
                        } else {
                            (i / 11 % 3) as u8
                        }
                    }
                })
                .collect();
            let mut c = Vec::new();
            compress_block(&data, &mut c);
            assert!(
                c == reference_block(&data),
                "trial {trial}: {n} bytes of kind {kind}"
            );
        }
    }

    /// Runs of back-to-back matches (the loop that compares eight bytes at once and takes
    /// the length from the upper four) ending at every distance from the end of the block,
    /// in both table sizes: the model's bytes, so the last match's length stops at the
    /// last-literals margin exactly where liblz4's does.
    #[test]
    fn immediate_matches_at_every_end_margin_equal_the_model() {
        for base in [200usize, LIMIT_64K + 100] {
            for period in [1usize, 2, 3, 5, 7, 8, 9, 12] {
                for tail in 0..=40usize {
                    let mut x = 0x2545_f491_4f6c_dd1du64 ^ (base * 31 + period * 7 + tail) as u64;
                    let mut data: Vec<u8> = (0..base)
                        .map(|_| {
                            x ^= x << 13;
                            x ^= x >> 7;
                            x ^= x << 17;
                            x as u8
                        })
                        .collect();
                    let pattern: Vec<u8> = data[..period].to_vec();
                    // Short runs of the pattern, each broken by one byte: many immediate
                    // matches of every short length.
                    for i in 0..60 {
                        data.extend(pattern.iter().cycle().take(period * (1 + i % 6) + i % 4));
                        data.push((i * 17) as u8);
                    }
                    data.extend(pattern.iter().cycle().take(tail));
                    let mut c = Vec::new();
                    compress_block(&data, &mut c);
                    assert!(
                        c == reference_block(&data),
                        "base {base} period {period} tail {tail}"
                    );
                }
            }
        }
    }

    /// The sequences of a block: (literals start, literals, match start in the output, match
    /// length, offset); the last has no match.
    fn sequences(block: &[u8]) -> Vec<(usize, usize, usize, usize, usize)> {
        let (mut ip, mut op, mut v) = (0, 0, Vec::new());
        loop {
            let token = block[ip] as usize;
            ip += 1;
            let mut lits = token >> 4;
            if lits == 15 {
                while block[ip] == 255 {
                    lits += 255;
                    ip += 1;
                }
                lits += block[ip] as usize;
                ip += 1;
            }
            ip += lits;
            if ip == block.len() {
                v.push((op, lits, op + lits, 0, 0));
                return v;
            }
            let offset = u16::from_le_bytes([block[ip], block[ip + 1]]) as usize;
            ip += 2;
            let mut len = token & 15;
            if len == 15 {
                while block[ip] == 255 {
                    len += 255;
                    ip += 1;
                }
                len += block[ip] as usize;
                ip += 1;
            }
            v.push((op, lits, op + lits, len + MINMATCH, offset));
            op += lits + len + MINMATCH;
        }
    }

    /// liblz4's end-of-block rules hold at every input length near the margins and on both
    /// sides of the 64 KiB table switch: no match starts within the last 12 bytes, none ends
    /// within the last 5, offsets are at most 65535, and matches are as long as they can be
    /// (the next byte differs, or the match reaches the last-literals margin).
    #[test]
    fn end_margins_and_table_switch() {
        let text: Vec<u8> = (0..LIMIT_64K as u32 + 300)
            .map(|i| b"abcdabcxabcdabcy"[(i as usize * 7 / 5) % 16] ^ ((i / 4099) as u8 & 1))
            .collect();
        let zeros = vec![0u8; LIMIT_64K + 300];
        let mut lengths: Vec<usize> = (0..=80).collect();
        lengths.extend(LIMIT_64K - 3..=LIMIT_64K + 3);
        lengths.extend([70_000, 65_536 + 40_000]);
        for data in [&text, &zeros] {
            for &n in &lengths {
                let src = &data[..n.min(data.len())];
                let n = src.len();
                let mut c = Vec::new();
                compress_block(src, &mut c);
                let mut d = vec![0u8; n];
                decompress_block_into(&c, &mut d).unwrap();
                assert_eq!(d, src, "length {n}");
                let seqs = sequences(&c);
                let (_, last_lits, last_at, _, _) = *seqs.last().unwrap();
                assert_eq!(last_at, n, "length {n}");
                assert!(last_lits >= LASTLITERALS.min(n), "length {n}");
                for &(_, _, at, len, offset) in &seqs[..seqs.len() - 1] {
                    assert!(at + MFLIMIT <= n, "match at {at} of {n}");
                    assert!(at + len + LASTLITERALS <= n, "match to {} of {n}", at + len);
                    assert!((1..=DISTANCE_MAX).contains(&offset));
                    let end = at + len;
                    assert!(
                        end + LASTLITERALS == n || src[end] != src[end - offset],
                        "match at {at} of {n} stops short"
                    );
                }
                // Inputs of at most MFLIMIT bytes are one run of literals.
                if n <= MFLIMIT {
                    assert_eq!(seqs.len(), 1);
                }
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
