//! A bzip2 decoder of h5chunk's own, written from the format's description: the stream header
//! `BZh1`..`BZh9`, blocks behind 48-bit magics with their CRCs, the symbol map, 2 to 6 Huffman
//! tables chosen per 50 symbols by MTF-coded selectors, the MTF/RUNA-RUNB stage, the inverse
//! Burrows-Wheeler transform and the initial run-length stage, then the stream's combined CRC.
//!
//! Speed comes from three places: Huffman symbols are read through a 10-bit lookup table (the
//! longer codes, rare, by the canonical code's first-code/count per length); the inverse BWT
//! keeps each position's byte in the low 8 bits of the same `u32` that links to the next
//! position, so the walk touches one word a byte; and the output goes straight into the
//! caller's slice, its CRC computed eight bytes at a time after each block.
//!
//! Hostile input: the block size comes from the header (at most 900 000 bytes), every count is
//! checked against it before it sizes or fills anything, reads past the input's end are zero
//! bits counted and refused, and every failure is a typed [`FilterError`].

use super::FilterError;

const BLOCK_MAGIC: u64 = 0x3141_5926_5359;
const END_MAGIC: u64 = 0x1772_4538_5090;
/// Symbols between two selectors.
const GROUP: u32 = 50;
/// The most selectors a block of 900 000 bytes needs (libbzip2 reads more but uses these).
const MAX_SELECTORS: usize = 18_002;
const MAX_CODE_LEN: u32 = 20;
/// Bits of the first-level Huffman lookup.
const FAST_BITS: u32 = 10;

fn corrupt(reason: &str) -> FilterError {
    FilterError::Corrupt {
        filter: "bzip2",
        reason: reason.to_owned(),
    }
}

/// An MSB-first bit reader; past the input's end it reads zero bytes and counts them.
struct Bits<'a> {
    data: &'a [u8],
    pos: usize,
    /// Unread bits, left-aligned.
    buf: u64,
    /// How many of `buf`'s top bits are unread (at most 63).
    count: u32,
    /// Zero bytes loaded past the input's end.
    over: usize,
}

impl<'a> Bits<'a> {
    fn new(data: &'a [u8]) -> Self {
        Self {
            data,
            pos: 0,
            buf: 0,
            count: 0,
            over: 0,
        }
    }

    /// At least 56 unread bits.
    #[inline]
    fn refill(&mut self) {
        let end = self.pos.checked_add(8);
        if let Some(word) = end.and_then(|e| self.data.get(self.pos..e)) {
            let mut b = [0u8; 8];
            b.copy_from_slice(word);
            // The bits past `count` that this ORs in are the same input bits the next refill
            // will OR at the same place, so they can be left there.
            self.buf |= u64::from_be_bytes(b) >> self.count;
            let bytes = (63u32.wrapping_sub(self.count)) >> 3;
            self.pos = self.pos.wrapping_add(bytes as usize);
            self.count = self.count.wrapping_add(bytes.wrapping_mul(8));
        } else {
            while self.count <= 56 {
                let byte = match self.data.get(self.pos) {
                    Some(&b) => {
                        self.pos = self.pos.wrapping_add(1);
                        b
                    }
                    None => {
                        self.over = self.over.saturating_add(1);
                        0
                    }
                };
                self.buf |= u64::from(byte) << (56u32.wrapping_sub(self.count));
                self.count = self.count.wrapping_add(8);
            }
        }
    }

    /// The next `n` bits (1..=32).
    #[inline]
    fn take(&mut self, n: u32) -> u32 {
        if self.count < n {
            self.refill();
        }
        let v = (self.buf >> (64u32.wrapping_sub(n))) as u32;
        self.buf <<= n;
        self.count = self.count.wrapping_sub(n);
        v
    }

    #[inline]
    fn bit(&mut self) -> bool {
        self.take(1) != 0
    }

    /// Whether more bits were read than the input has.
    fn overrun(&self) -> bool {
        self.over.saturating_mul(8) > self.count as usize
    }
}

/// One Huffman table: a lookup of the first [`FAST_BITS`] bits, then canonical decoding.
struct Huffman {
    /// `symbol << 5 | length` for codes of at most `FAST_BITS` bits; 0 for longer ones.
    fast: [u16; 1 << FAST_BITS],
    /// Per length: the first code, how many codes and where they start in `perm`.
    first: [u32; MAX_CODE_LEN as usize + 1],
    count: [u32; MAX_CODE_LEN as usize + 1],
    offset: [u32; MAX_CODE_LEN as usize + 1],
    /// Symbols by (length, symbol).
    perm: [u16; 258],
}

impl Huffman {
    fn new() -> Self {
        Self {
            fast: [0; 1 << FAST_BITS],
            first: [0; MAX_CODE_LEN as usize + 1],
            count: [0; MAX_CODE_LEN as usize + 1],
            offset: [0; MAX_CODE_LEN as usize + 1],
            perm: [0; 258],
        }
    }

    /// Build from code lengths (each 1..=20, checked by the caller).
    fn build(&mut self, lengths: &[u8]) -> Result<(), FilterError> {
        self.count = [0; MAX_CODE_LEN as usize + 1];
        for &l in lengths {
            let c = self
                .count
                .get_mut(usize::from(l))
                .ok_or_else(|| corrupt("Huffman code length out of range"))?;
            *c = c.wrapping_add(1);
        }
        let mut code: u32 = 0;
        let mut idx: u32 = 0;
        for len in 1..=MAX_CODE_LEN as usize {
            let n = self.count.get(len).copied().unwrap_or(0);
            if let (Some(f), Some(o)) = (self.first.get_mut(len), self.offset.get_mut(len)) {
                *f = code;
                *o = idx;
            }
            idx = idx.wrapping_add(n);
            code = code.wrapping_add(n);
            if code > 1u32 << len {
                return Err(corrupt("oversubscribed Huffman code"));
            }
            code <<= 1;
        }
        // Symbols in canonical order: a counting sort by length.
        let mut next = self.offset;
        for (sym, &l) in lengths.iter().enumerate() {
            let slot = next
                .get_mut(usize::from(l))
                .ok_or_else(|| corrupt("Huffman code length out of range"))?;
            if let Some(p) = self.perm.get_mut(*slot as usize) {
                *p = sym as u16;
            }
            *slot = slot.wrapping_add(1);
        }
        self.fast = [0; 1 << FAST_BITS];
        for len in 1..=FAST_BITS {
            let l = len as usize;
            let (first, n, off) = (
                self.first.get(l).copied().unwrap_or(0),
                self.count.get(l).copied().unwrap_or(0),
                self.offset.get(l).copied().unwrap_or(0),
            );
            let span = 1usize << (FAST_BITS.wrapping_sub(len));
            for k in 0..n {
                let sym = self
                    .perm
                    .get(off.wrapping_add(k) as usize)
                    .copied()
                    .unwrap_or(0);
                let start = (first.wrapping_add(k) as usize) << (FAST_BITS.wrapping_sub(len));
                let entry = sym << 5 | len as u16;
                if let Some(s) = self.fast.get_mut(start..start.saturating_add(span)) {
                    s.fill(entry);
                }
            }
        }
        Ok(())
    }

    /// The next symbol.
    #[inline]
    fn decode(&self, bits: &mut Bits<'_>) -> Result<u16, FilterError> {
        if bits.count < MAX_CODE_LEN {
            bits.refill();
        }
        let peek = (bits.buf >> (64 - MAX_CODE_LEN)) as u32;
        let e = self
            .fast
            .get((peek >> (MAX_CODE_LEN - FAST_BITS)) as usize & ((1 << FAST_BITS) - 1))
            .copied()
            .unwrap_or(0);
        if e != 0 {
            let len = u32::from(e & 31);
            bits.buf <<= len;
            bits.count = bits.count.wrapping_sub(len);
            return Ok(e >> 5);
        }
        self.decode_long(bits, peek)
    }

    #[cold]
    fn decode_long(&self, bits: &mut Bits<'_>, peek: u32) -> Result<u16, FilterError> {
        for len in FAST_BITS.wrapping_add(1)..=MAX_CODE_LEN {
            let l = len as usize;
            let v = peek >> (MAX_CODE_LEN.wrapping_sub(len));
            let d = v.wrapping_sub(self.first.get(l).copied().unwrap_or(0));
            if d < self.count.get(l).copied().unwrap_or(0) {
                bits.buf <<= len;
                bits.count = bits.count.wrapping_sub(len);
                let at = self.offset.get(l).copied().unwrap_or(0).wrapping_add(d);
                return self
                    .perm
                    .get(at as usize)
                    .copied()
                    .ok_or_else(|| corrupt("bad Huffman code"));
            }
        }
        Err(corrupt("bad Huffman code"))
    }
}

/// The block-level state, allocated once a stream.
struct Decoder {
    /// Block size from the header.
    max_block: usize,
    /// Per position: its byte in the low 8 bits, then (after the inverse BWT) the next
    /// position above them.
    tt: Vec<u32>,
    selectors: Vec<u8>,
    tables: Vec<Huffman>,
}

/// What [`decode`] refuses: a block with the randomisation bit set (only bzip2 before 0.9.5
/// wrote them); [`crate::bzip2`] hands such streams to the `bzip2` crate's decoder.
pub(crate) const RANDOMISED: &str = "randomised blocks (written by bzip2 before 0.9.5)";

impl Decoder {
    /// Read one block's Huffman/MTF/RLE2 stage into `tt`; returns origPtr.
    fn read_block(&mut self, bits: &mut Bits<'_>) -> Result<usize, FilterError> {
        if bits.bit() {
            return Err(FilterError::Unsupported {
                filter: "bzip2",
                what: RANDOMISED,
            });
        }
        let orig = bits.take(24) as usize;

        // The symbol map: which bytes occur, 16 groups of 16.
        let mut alphabet = [0u8; 256];
        let mut in_use: usize = 0;
        let groups = bits.take(16);
        for g in 0..16u32 {
            if groups & (0x8000 >> g) == 0 {
                continue;
            }
            let members = bits.take(16);
            for m in 0..16u32 {
                if members & (0x8000 >> m) != 0 {
                    if let Some(a) = alphabet.get_mut(in_use) {
                        *a = (g << 4 | m) as u8;
                    }
                    in_use = in_use.wrapping_add(1);
                }
            }
        }
        if in_use == 0 {
            return Err(corrupt("block uses no symbol"));
        }
        // RUNA, RUNB, the MTF positions 1..in_use, end of block.
        let alpha = in_use.wrapping_add(2);

        let n_tables = bits.take(3) as usize;
        if !(2..=6).contains(&n_tables) {
            return Err(corrupt("Huffman table count outside 2..=6"));
        }
        let n_selectors = bits.take(15) as usize;
        if n_selectors == 0 {
            return Err(corrupt("no selectors"));
        }
        let mut order: [u8; 6] = [0, 1, 2, 3, 4, 5];
        self.selectors.clear();
        for i in 0..n_selectors {
            let mut j: usize = 0;
            while bits.bit() {
                j = j.wrapping_add(1);
                if j >= n_tables {
                    return Err(corrupt("selector out of range"));
                }
            }
            let s = order.get(j).copied().unwrap_or(0);
            if let Some(head) = order.get_mut(..=j) {
                head.rotate_right(1);
            }
            if i < MAX_SELECTORS {
                self.selectors.push(s);
            }
        }
        if bits.overrun() {
            return Err(corrupt("truncated"));
        }

        let mut lengths = [0u8; 258];
        for t in 0..n_tables {
            let mut len = bits.take(5);
            for l in lengths.iter_mut().take(alpha) {
                loop {
                    if !(1..=MAX_CODE_LEN).contains(&len) {
                        return Err(corrupt("Huffman code length out of range"));
                    }
                    if !bits.bit() {
                        break;
                    }
                    len = if bits.bit() {
                        len.wrapping_sub(1)
                    } else {
                        len.wrapping_add(1)
                    };
                }
                *l = len as u8;
            }
            if bits.overrun() {
                return Err(corrupt("truncated"));
            }
            let table = self
                .tables
                .get_mut(t)
                .ok_or_else(|| corrupt("Huffman table count outside 2..=6"))?;
            table.build(lengths.get(..alpha).unwrap_or(&[]))?;
        }

        self.read_symbols(bits, alphabet, in_use)?;
        if orig >= self.tt.len() {
            return Err(corrupt("origPtr past the block"));
        }
        Ok(orig)
    }

    /// The Huffman-coded MTF/RUNA-RUNB symbols up to end of block, as bytes in `tt`.
    fn read_symbols(
        &mut self,
        bits: &mut Bits<'_>,
        mut mtf: [u8; 256],
        in_use: usize,
    ) -> Result<(), FilterError> {
        let max = self.max_block;
        let tt = &mut self.tt;
        tt.clear();
        let eob = in_use.wrapping_add(1) as u16;
        let mut selectors = self.selectors.iter();
        let mut table = self
            .tables
            .first()
            .ok_or_else(|| corrupt("no Huffman table"))?;
        let mut left: u32 = 0;
        let mut run: usize = 0;
        let mut weight: usize = 1;
        loop {
            if left == 0 {
                let s = selectors
                    .next()
                    .ok_or_else(|| corrupt("more symbols than selectors"))?;
                table = self
                    .tables
                    .get(usize::from(*s))
                    .ok_or_else(|| corrupt("selector out of range"))?;
                left = GROUP;
                if bits.overrun() {
                    return Err(corrupt("truncated"));
                }
            }
            left = left.wrapping_sub(1);
            let sym = table.decode(bits)?;
            if sym <= 1 {
                // RUNA adds the weight, RUNB twice it; the weight doubles each symbol.
                if weight > max {
                    return Err(corrupt("run longer than the block"));
                }
                run = run.wrapping_add(weight << sym);
                weight <<= 1;
                if run > max {
                    return Err(corrupt("run longer than the block"));
                }
                continue;
            }
            if run > 0 {
                if run > max.wrapping_sub(tt.len()) {
                    return Err(corrupt("block longer than its header's size"));
                }
                let b = u32::from(mtf.first().copied().unwrap_or(0));
                tt.resize(tt.len().wrapping_add(run), b);
                run = 0;
                weight = 1;
            }
            if sym == eob {
                break;
            }
            let idx = usize::from(sym).wrapping_sub(1);
            if idx >= in_use {
                return Err(corrupt("MTF index past the symbol map"));
            }
            let v = mtf.get(idx).copied().unwrap_or(0);
            if let Some(head) = mtf.get_mut(..=idx) {
                head.copy_within(..idx, 1);
            }
            if let Some(h) = mtf.first_mut() {
                *h = v;
            }
            if tt.len() >= max {
                return Err(corrupt("block longer than its header's size"));
            }
            tt.push(u32::from(v));
        }
        Ok(())
    }

    /// Invert the BWT in place in `tt`, then undo the initial run-length stage into
    /// `out[at..]`; returns the new end.
    fn write_block(
        &mut self,
        orig: usize,
        out: &mut [u8],
        at: usize,
    ) -> Result<usize, FilterError> {
        let tt = &mut self.tt;
        let mut start = [0u32; 256];
        for &e in tt.iter() {
            if let Some(c) = start.get_mut((e & 0xff) as usize) {
                *c = c.wrapping_add(1);
            }
        }
        let mut sum: u32 = 0;
        for c in &mut start {
            let n = *c;
            *c = sum;
            sum = sum.wrapping_add(n);
        }
        for i in 0..tt.len() {
            let b = tt.get(i).copied().unwrap_or(0) & 0xff;
            if let Some(c) = start.get_mut(b as usize) {
                if let Some(slot) = tt.get_mut(*c as usize) {
                    *slot |= (i as u32) << 8;
                }
                *c = c.wrapping_add(1);
            }
        }

        let overflow = || corrupt("decodes past the chunk's size");
        let mut pos = tt.get(orig).copied().unwrap_or(0) >> 8;
        let mut w = at;
        // The byte repeated so far and how many times; after four, the next byte is a count.
        let mut last: u32 = 256;
        let mut reps: u32 = 0;
        for _ in 0..tt.len() {
            let e = tt
                .get(pos as usize)
                .copied()
                .ok_or_else(|| corrupt("bad BWT link"))?;
            pos = e >> 8;
            let ch = e & 0xff;
            if reps == 4 {
                let n = ch as usize;
                let end = w.checked_add(n).ok_or_else(overflow)?;
                out.get_mut(w..end).ok_or_else(overflow)?.fill(last as u8);
                w = end;
                reps = 0;
                last = 256;
                continue;
            }
            *out.get_mut(w).ok_or_else(overflow)? = ch as u8;
            w = w.wrapping_add(1);
            if ch == last {
                reps = reps.wrapping_add(1);
            } else {
                last = ch;
                reps = 1;
            }
        }
        Ok(w)
    }
}

/// Decode one bzip2 stream into `out`, returning how many bytes it holds; bytes after the
/// stream's end are ignored (as libbzip2's one-stream decoders do).
pub(crate) fn decode(data: &[u8], out: &mut [u8]) -> Result<usize, FilterError> {
    let mut bits = Bits::new(data);
    if bits.take(24) != 0x42_5a68 {
        return Err(corrupt("not a bzip2 stream (no BZh header)"));
    }
    let level = bits.take(8);
    if !(u32::from(b'1')..=u32::from(b'9')).contains(&level) {
        return Err(corrupt("block size outside 1..=9"));
    }
    let max_block = (level.wrapping_sub(u32::from(b'0')) as usize).wrapping_mul(100_000);
    let mut tt = Vec::new();
    tt.try_reserve_exact(max_block)
        .map_err(|_| FilterError::OutOfMemory {
            filter: "bzip2",
            bytes: max_block.saturating_mul(4),
        })?;
    let mut dec = Decoder {
        max_block,
        tt,
        selectors: Vec::with_capacity(MAX_SELECTORS),
        tables: (0..6).map(|_| Huffman::new()).collect(),
    };
    let mut combined: u32 = 0;
    let mut w: usize = 0;
    loop {
        let magic = u64::from(bits.take(24)) << 24 | u64::from(bits.take(24));
        let stored = bits.take(32);
        if bits.overrun() {
            return Err(corrupt("truncated"));
        }
        match magic {
            BLOCK_MAGIC => {
                let orig = dec.read_block(&mut bits)?;
                if bits.overrun() {
                    return Err(corrupt("truncated"));
                }
                let end = dec.write_block(orig, out, w)?;
                let crc = crc32(out.get(w..end).unwrap_or(&[]));
                if crc != stored {
                    return Err(corrupt("block CRC mismatch"));
                }
                combined = combined.rotate_left(1) ^ crc;
                w = end;
            }
            END_MAGIC => {
                if stored != combined {
                    return Err(corrupt("stream CRC mismatch"));
                }
                return Ok(w);
            }
            _ => return Err(corrupt("bad block magic")),
        }
    }
}

/// CRC-32 as bzip2 uses it: polynomial 0x04c11db7, most significant bit first; eight tables
/// for eight bytes a step.
const CRC_TABLES: [[u32; 256]; 8] = crc_tables();

// Evaluated while compiling (a bad index would be a build error, never a run-time panic).
#[allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]
const fn crc_tables() -> [[u32; 256]; 8] {
    let mut t = [[0u32; 256]; 8];
    let mut i = 0;
    while i < 256 {
        let mut c = (i as u32) << 24;
        let mut k = 0;
        while k < 8 {
            c = if c & 0x8000_0000 != 0 {
                (c << 1) ^ 0x04c1_1db7
            } else {
                c << 1
            };
            k += 1;
        }
        t[0][i] = c;
        i += 1;
    }
    let mut s = 1;
    while s < 8 {
        let mut i = 0;
        while i < 256 {
            let p = t[s - 1][i];
            t[s][i] = (p << 8) ^ t[0][(p >> 24) as usize];
            i += 1;
        }
        s += 1;
    }
    t
}

fn crc32(data: &[u8]) -> u32 {
    let [t0, t1, t2, t3, t4, t5, t6, t7] = &CRC_TABLES;
    let at = |t: &[u32; 256], i: u32| t.get((i & 0xff) as usize).copied().unwrap_or(0);
    let mut crc: u32 = !0;
    let mut words = data.chunks_exact(8);
    for w in &mut words {
        let mut b = [0u8; 8];
        b.copy_from_slice(w);
        let hi = crc ^ u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
        let lo = u32::from_be_bytes([b[4], b[5], b[6], b[7]]);
        crc = at(t7, hi >> 24)
            ^ at(t6, hi >> 16)
            ^ at(t5, hi >> 8)
            ^ at(t4, hi)
            ^ at(t3, lo >> 24)
            ^ at(t2, lo >> 16)
            ^ at(t1, lo >> 8)
            ^ at(t0, lo);
    }
    for &byte in words.remainder() {
        crc = (crc << 8) ^ at(t0, (crc >> 24) ^ u32::from(byte));
    }
    !crc
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use proptest::prelude::*;

    use super::*;

    /// The `bzip2` crate (libbzip2's Rust port) as the oracle.
    fn reference(data: &[u8], level: u32) -> Vec<u8> {
        let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::new(level));
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn ours(stream: &[u8], limit: usize) -> Result<Vec<u8>, FilterError> {
        let mut out = vec![0u8; limit];
        let n = decode(stream, &mut out)?;
        out.truncate(n);
        Ok(out)
    }

    /// A small xorshift so the cases are the same every run.
    fn noise(n: usize, seed: u64) -> Vec<u8> {
        let mut x = seed | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    }

    /// Climate-like: slowly varying little-endian floats, as the bench's fields.
    fn smooth(n: usize) -> Vec<u8> {
        (0..n / 4)
            .flat_map(|i| (280.0f32 + ((i as f32) * 0.001).sin() * 20.0).to_le_bytes())
            .collect()
    }

    #[test]
    fn byte_exact_against_the_reference() {
        let mut runs = Vec::new();
        for (i, len) in [1usize, 3, 4, 5, 8, 250, 251, 255, 256, 300, 1000, 70_000]
            .iter()
            .enumerate()
        {
            runs.extend(std::iter::repeat_n((i as u8).wrapping_mul(37), *len));
            runs.push(0xAA);
        }
        let cases: Vec<(&str, Vec<u8>)> = vec![
            ("empty", Vec::new()),
            ("one byte", vec![7]),
            ("all bytes", (0..=255u8).collect()),
            ("noise", noise(300_000, 1)),
            (
                "low-entropy noise",
                noise(250_000, 2).iter().map(|b| b & 3).collect(),
            ),
            ("runs", runs),
            ("zeros", vec![0; 1_000_000]),
            ("smooth floats", smooth(1_200_000)),
        ];
        for (name, data) in &cases {
            for level in [1, 5, 9] {
                let c = reference(data, level);
                let got =
                    ours(&c, data.len()).unwrap_or_else(|e| panic!("{name} level {level}: {e}"));
                assert!(got == *data, "{name} level {level}: output differs");
                if !data.is_empty() {
                    assert!(
                        ours(&c, data.len() - 1).is_err(),
                        "{name}: limit not enforced"
                    );
                }
            }
        }
    }

    #[test]
    fn crc_matches_bit_by_bit() {
        let data = noise(1003, 9);
        let mut crc: u32 = !0;
        for &b in &data {
            crc ^= u32::from(b) << 24;
            for _ in 0..8 {
                crc = if crc & 0x8000_0000 != 0 {
                    (crc << 1) ^ 0x04c1_1db7
                } else {
                    crc << 1
                };
            }
        }
        assert_eq!(crc32(&data), !crc);
    }

    #[test]
    fn typed_errors_on_bad_headers() {
        let c = reference(b"hello hello hello", 9);
        assert!(ours(b"", 100).is_err());
        assert!(ours(b"BZh0", 100).is_err());
        assert!(ours(b"PK\x03\x04", 100).is_err());
        let mut bad = c.clone();
        bad[4] ^= 1; // the block magic
        assert!(ours(&bad, 100).is_err());
        // A stream CRC that does not match (the last 4 bytes hold it and the padding).
        let mut bad = c.clone();
        let n = bad.len();
        bad[n - 2] ^= 0x10;
        assert!(ours(&bad, 100).is_err());
        // Bytes after the stream are ignored, as by libbzip2's one-stream decoding.
        let mut extra = c.clone();
        extra.extend_from_slice(b"trailing");
        assert_eq!(ours(&extra, 100).unwrap(), b"hello hello hello");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        /// Truncated or mutated streams never panic, hang or overrun: a typed error, or at
        /// most `limit` bytes (a flip can land in the padding or leave a CRC collision).
        #[test]
        fn hostile_streams_fail_typed(
            seed in any::<u64>(),
            level in 1u32..=9,
            cut in any::<prop::sample::Index>(),
            flips in prop::collection::vec((any::<prop::sample::Index>(), 1u8..=255), 0..4),
        ) {
            let data: Vec<u8> = noise(20_000, seed).iter().map(|b| b % 5).collect();
            let mut c = reference(&data, level);
            for (at, x) in &flips {
                let i = at.index(c.len());
                c[i] ^= x;
            }
            if flips.is_empty() {
                c.truncate(cut.index(c.len()));
            }
            match ours(&c, data.len()) {
                Ok(out) => prop_assert!(out.len() <= data.len()),
                Err(e) => {
                    let typed = matches!(e, FilterError::Corrupt { .. } | FilterError::Unsupported { .. });
                    prop_assert!(typed, "{e}");
                }
            }
        }
    }
}
