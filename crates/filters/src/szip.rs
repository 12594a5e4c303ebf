//! The szip filter (4), read and written: CCSDS 121.0-B Adaptive Entropy Coding as libaec's szlib
//! interface stores it for libhdf5 (NASA's HDF-EOS files, h5py's `compression='szip'`).
//!
//! A chunk is the uncompressed size (4 bytes, little-endian), then one AEC bit stream (most
//! significant bit first). Client data: [options mask, pixels per block, bits per pixel, pixels
//! per scanline]. Of the mask, NN (32) turns on the unit-delay predictor, MSB (16) makes the
//! decoded samples big-endian (LSB, 8, little-endian); EC, K13, CHIP and RAW change nothing in
//! the stream libaec writes.
//!
//! How libaec's szlib layer maps the parameters onto the AEC stream:
//! - 32- and 64-bit pixels are coded as 8-bit samples of the chunk's byte planes: the chunk is
//!   transposed so that byte `j` of every element comes before byte `j + 1` of any.
//! - Samples take 1 byte up to 8 bits, 2 up to 16, 4 beyond.
//! - A reference sample interval (RSI) is one scanline, `ceil(pixels per scanline / pixels per
//!   block)` blocks; when the scanline is not a whole number of blocks, each is padded to one
//!   (and the padding dropped here).
//!
//! The stream, per block of J samples: an identifier of 3 bits (samples up to 8 bits), 4 (up to
//! 16) or 5 (beyond). All ones: J samples stored as they are. 0 then a bit: 0 is a run of zero
//! blocks (a fundamental sequence, i.e. a unary count `c`: `c + 1` blocks, except that 5 means
//! up to the end of the RSI or of the 64-block segment and more than 5 means one fewer), 1 the
//! second extension (each fundamental sequence `m` is a pair `(a, b)` with
//! `m = (a + b)(a + b + 1) / 2 + b`). Otherwise `k = id - 1`: the split-sample option, every
//! sample's high part as a fundamental sequence, then every sample's `k` low bits. With the
//! predictor, the first block of each RSI starts with the raw reference sample (right after the
//! identifier and, for low entropy blocks, the extra bit), which the block's J - 1 other samples
//! follow; every later sample is a mapped prediction residual of the previous value.

use super::FilterError;

fn corrupt(reason: impl Into<String>) -> FilterError {
    FilterError::Corrupt {
        filter: "szip",
        reason: reason.into(),
    }
}

/// libhdf5's options mask bits that matter to decoding.
const NN_OPTION: u32 = 32;
const MSB_OPTION: u32 = 16;
/// Largest pixels per block (CCSDS allows 8, 16, 32; libaec 64 too).
const MAX_BLOCK: u32 = 64;
/// Zero-block runs of this many blocks mean "to the end of the segment or RSI".
const ROS: u32 = 5;
/// Largest fundamental sequence value the second extension option can code (a + b ≤ 12).
const SE_MAX: u32 = 90;

/// The filter's parameters, from its client data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Params {
    preprocess: bool,
    msb: bool,
    pixels_per_block: usize,
    bits_per_pixel: u32,
    pixels_per_scanline: usize,
}

impl Params {
    /// How the pixels become AEC samples: the byte planes a pixel is split into (4 or 8 for 32-
    /// and 64-bit pixels, which libhdf5's filter codes plane by plane as 8-bit samples, else 1),
    /// the bits of a sample, and the bytes a sample takes.
    fn samples(&self) -> (usize, u32, usize) {
        let planes = match self.bits_per_pixel {
            32 => 4,
            64 => 8,
            _ => 1,
        };
        let bits = if planes > 1 { 8 } else { self.bits_per_pixel };
        let sample_bytes = match bits {
            17.. => 4,
            9..=16 => 2,
            _ => 1,
        };
        (planes, bits, sample_bytes)
    }

    /// The parameters, or `None` when they are unusable.
    pub fn parse(cd: &[u32]) -> Option<Params> {
        let &[mask, ppb, bpp, pps, ..] = cd else {
            return None;
        };
        let usable = (2..=MAX_BLOCK).contains(&ppb)
            && ppb.is_multiple_of(2)
            && ((1..=32).contains(&bpp) || bpp == 64)
            // libhdf5 never makes a scanline shorter than a block.
            && pps >= ppb;
        usable.then_some(Params {
            preprocess: mask & NN_OPTION != 0,
            msb: mask & MSB_OPTION != 0,
            pixels_per_block: ppb as usize,
            bits_per_pixel: bpp,
            pixels_per_scanline: pps as usize,
        })
    }
}

/// MSB-first bit reader over the stream.
struct Bits<'a> {
    data: &'a [u8],
    pos: usize,
    /// The next bits of the stream from the top down: `n` counted ones, then (after a word
    /// refill) a few more of the stream not yet counted, or zeros.
    acc: u64,
    /// Bits counted at the top of `acc` (at most 64).
    n: u32,
}

impl<'a> Bits<'a> {
    fn new(data: &'a [u8]) -> Self {
        Bits {
            data,
            pos: 0,
            acc: 0,
            n: 0,
        }
    }

    /// Count at least 56 bits, or all that the stream has left (out of line: the hot paths
    /// below stay small enough to inline).
    #[inline(never)]
    fn refill(&mut self) {
        if self.n > 56 {
            return;
        }
        let next = self
            .pos
            .checked_add(8)
            .and_then(|end| self.data.get(self.pos..end))
            .and_then(|w| w.first_chunk::<8>());
        if let Some(&w) = next {
            // One word: the whole bytes that fit below the counted bits are counted; the
            // part of the next byte shifted in with them is read again next time.
            self.acc |= u64::from_be_bytes(w) >> self.n;
            let bytes = (63u32.saturating_sub(self.n)) / 8;
            self.pos = self.pos.saturating_add(bytes as usize);
            self.n = self.n.saturating_add(bytes.saturating_mul(8));
            return;
        }
        while self.n <= 56 {
            let Some(&b) = self.data.get(self.pos) else {
                return;
            };
            self.pos = self.pos.saturating_add(1);
            // Below the counted bits, over whatever partial byte an earlier word left.
            let keep = u64::MAX
                .checked_shl(64u32.saturating_sub(self.n))
                .unwrap_or(0);
            self.acc = (self.acc & keep) | (u64::from(b) << 56u32.saturating_sub(self.n));
            self.n = self.n.saturating_add(8);
        }
    }

    /// Drop the top `k` counted bits (`k <= n`).
    #[inline(always)]
    fn consume(&mut self, k: u32) {
        self.acc = self.acc.checked_shl(k).unwrap_or(0);
        self.n = self.n.saturating_sub(k);
    }

    /// The next `k` bits (at most 32).
    #[inline(always)]
    fn get(&mut self, k: u32) -> Result<u32, FilterError> {
        if k == 0 {
            return Ok(0);
        }
        if self.n < k {
            self.refill();
            if self.n < k {
                return Err(corrupt("stream ends inside a block"));
            }
        }
        let v = self.acc.checked_shr(64u32.saturating_sub(k)).unwrap_or(0);
        self.consume(k);
        Ok(u32::try_from(v).unwrap_or(u32::MAX))
    }

    /// Add the next `k` bits (1 to 32) to each of `values` in turn: the split-sample option's
    /// low parts.
    #[inline(always)]
    fn add_low_bits(&mut self, k: u32, values: &mut [u32]) -> Result<(), FilterError> {
        self.each_bits(k, values, u32::wrapping_add)
    }

    /// Set each of `values` in turn to the next `bits` bits (1 to 32): an uncompressed
    /// block's samples.
    #[inline(always)]
    fn take_bits(&mut self, bits: u32, values: &mut [u32]) -> Result<(), FilterError> {
        self.each_bits(bits, values, |_, new| new)
    }

    /// Each of `values` in turn combined by `op` with the next `k` bits (1 to 32; none
    /// otherwise). The bits are counted for a group of samples at a time, so the check that
    /// refills the accumulator runs once a group rather than once a sample.
    #[inline(always)]
    fn each_bits(
        &mut self,
        k: u32,
        values: &mut [u32],
        op: impl Fn(u32, u32) -> u32,
    ) -> Result<(), FilterError> {
        if !(1..=32).contains(&k) {
            return Ok(());
        }
        // `n` is more than 56 after a refill unless the stream ends.
        let per = (56u32.checked_div(k).unwrap_or(1)).max(1) as usize;
        let shift = 64u32.wrapping_sub(k);
        for group in values.chunks_mut(per) {
            let need = k.saturating_mul(u32::try_from(group.len()).unwrap_or(u32::MAX));
            if self.n < need {
                self.refill();
                if self.n < need {
                    return Err(corrupt("stream ends inside a block"));
                }
            }
            let mut acc = self.acc;
            for v in group {
                // `shift` is 32 to 63: the top `k` bits fit a u32.
                *v = op(*v, acc.wrapping_shr(shift) as u32);
                acc = acc.wrapping_shl(k);
            }
            self.acc = acc;
            self.n = self.n.wrapping_sub(need);
        }
        Ok(())
    }

    /// Set each of `values` to the next fundamental sequence shifted up by `k` (below 32):
    /// the split-sample option's high parts, wrapped to 32 bits as libaec wraps a corrupt
    /// one. The accumulator stays in registers across the block.
    #[inline(always)]
    fn high_parts(&mut self, k: u32, values: &mut [u32]) -> Result<(), FilterError> {
        let (mut acc, mut n) = (self.acc, self.n);
        for v in values.iter_mut() {
            let zeros = acc.leading_zeros();
            let high = if zeros < n {
                // `zeros` is below 64 (it is below `n`, at most 64): two shifts in range.
                acc = acc.wrapping_shl(zeros).wrapping_shl(1);
                n = n.wrapping_sub(zeros).wrapping_sub(1);
                zeros
            } else {
                self.acc = acc;
                self.n = n;
                let high = self.fs_across_refills()?;
                (acc, n) = (self.acc, self.n);
                high
            };
            *v = (u64::from(high).wrapping_shl(k)) as u32;
        }
        self.acc = acc;
        self.n = n;
        Ok(())
    }

    /// A fundamental sequence: the number of 0 bits before the next 1.
    #[inline(always)]
    fn fs(&mut self) -> Result<u32, FilterError> {
        let zeros = self.acc.leading_zeros();
        if zeros < self.n {
            self.consume(zeros.saturating_add(1));
            return Ok(zeros);
        }
        self.fs_across_refills()
    }

    /// [`fs`](Self::fs) whose zeros run past the counted bits.
    #[inline(never)]
    fn fs_across_refills(&mut self) -> Result<u32, FilterError> {
        let mut count = 0u32;
        loop {
            let zeros = self.acc.leading_zeros();
            if zeros < self.n {
                self.consume(zeros.saturating_add(1));
                return Ok(count.saturating_add(zeros));
            }
            // All counted bits are zeros.
            count = count.saturating_add(self.n);
            self.consume(self.n);
            self.refill();
            if self.n == 0 {
                return Err(corrupt("stream ends inside a fundamental sequence"));
            }
        }
    }
}

/// The second extension's fundamental sequence `m` as (sum, second) of its pair, for every `m`
/// up to [`SE_MAX`]: one lookup per code instead of a search whose length varies with `m`.
const SE_TABLE: [(u8, u8); SE_MAX as usize + 1] = {
    let mut t = [(0u8, 0u8); SE_MAX as usize + 1];
    // The entries in order of m = s(s + 1)/2 + second, second in 0..=s.
    let mut rest: &mut [(u8, u8)] = &mut t;
    let mut s = 0u8;
    while s <= 12 {
        let mut second = 0u8;
        while second <= s {
            if let [e, tail @ ..] = rest {
                *e = (s, second);
                rest = tail;
            }
            second += 1;
        }
        s += 1;
    }
    t
};

/// How decoded samples are stored in the chunk.
#[derive(Clone, Copy)]
struct Layout {
    /// Bytes a sample takes: 1, 2 or 4.
    sample_bytes: usize,
    /// Big-endian samples.
    msb: bool,
    /// Whether the values are the unit-delay predictor's residuals.
    preprocess: bool,
    /// Samples of each RSI (one padded scanline) that are the scanline's: the padding after
    /// them is decoded and dropped.
    keep: usize,
}

/// Write one RSI's decoded `values` into `dst` (exactly their bytes), each sample as `put`
/// stores it, undoing the unit-delay predictor on the way when `preprocess`: the first value
/// is then the reference sample, every later one a mapped residual of the previous sample.
/// The predictor runs without branches on the data (selects only): residuals' signs and
/// ranges are as good as random in noisy data.
#[inline(always)]
fn emit<const N: usize>(
    values: &[u32],
    dst: &mut [u8],
    preprocess: bool,
    xmax: u32,
    put: impl Fn(u32) -> [u8; N],
) {
    let dst = dst.as_chunks_mut::<N>().0;
    if !preprocess {
        for (d, &v) in dst.iter_mut().zip(values) {
            *d = put(v & xmax);
        }
        return;
    }
    let (Some((first, rest)), Some((d0, dst))) = (values.split_first(), dst.split_first_mut())
    else {
        return;
    };
    let mut x = *first & xmax;
    *d0 = put(x);
    let step = |x: u32, d: u32| -> u32 {
        // The distance to the nearer end of the range (x and xmax - x are never equal: xmax
        // is odd), and the residual that reaches past it, mapped back from that end.
        let below = xmax.wrapping_sub(x);
        let (room, outside) = if below < x {
            (below, xmax.wrapping_sub(d))
        } else {
            (x, d)
        };
        // Even residuals step up by d/2, odd ones down by (d + 1)/2: x + !(d/2) is
        // x - (d/2 + 1). Taken when (d + 1)/2 <= room, i.e. d <= 2 room (no wrap: room is at
        // most xmax/2), where the step stays in the range.
        let inside = x.wrapping_add((d >> 1) ^ 0u32.wrapping_sub(d & 1));
        if d <= room.wrapping_mul(2) {
            inside
        } else {
            outside & xmax
        }
    };
    // Sixteen residuals at a time: a group of zeros (zero blocks, a constant byte plane)
    // repeats the sample before it, with no walk through the predictor.
    let (groups, tail) = rest.as_chunks::<16>();
    let (out_groups, out_tail) = dst.as_chunks_mut::<16>();
    for (o, g) in out_groups.iter_mut().zip(groups) {
        if g.iter().fold(0, |a, &d| a | d) == 0 {
            o.fill(put(x));
            continue;
        }
        for (o, &d) in o.iter_mut().zip(g) {
            x = step(x, d);
            *o = put(x);
        }
    }
    for (o, &d) in out_tail.iter_mut().zip(tail) {
        x = step(x, d);
        *o = put(x);
    }
}

/// Write `values` (one RSI's kept samples) at `out[at..]` as `layout` stores them, through
/// [`emit`]: the end of what was written, or `None` when they do not fit. Out of line: the
/// predictor's loop keeps its values in registers, away from the decoder's.
#[inline(never)]
fn store(values: &[u32], layout: Layout, xmax: u32, out: &mut [u8], at: usize) -> Option<usize> {
    let end = values
        .len()
        .checked_mul(layout.sample_bytes)
        .and_then(|n| at.checked_add(n))?;
    let dst = out.get_mut(at..end)?;
    let pre = layout.preprocess;
    match (layout.sample_bytes, layout.msb) {
        (1, _) => emit(values, dst, pre, xmax, |v| [v as u8]),
        (2, false) => emit(values, dst, pre, xmax, |v| (v as u16).to_le_bytes()),
        (2, true) => emit(values, dst, pre, xmax, |v| (v as u16).to_be_bytes()),
        (_, false) => emit(values, dst, pre, xmax, u32::to_le_bytes),
        (_, true) => emit(values, dst, pre, xmax, u32::to_be_bytes),
    }
    Some(end)
}

/// The RSI being decoded: its samples so far, in a buffer no longer than the samples the
/// chunk still needs. A block decoded past that end (the last RSI of a chunk is cut short)
/// is decoded all the same, to keep the stream in step, and its samples past the end
/// dropped, as the RSI's truncation would drop them.
struct Rsi<'b> {
    buf: &'b mut [u32],
    len: usize,
}

impl Rsi<'_> {
    #[inline(always)]
    fn push(&mut self, v: u32) {
        if let Some(slot) = self.buf.get_mut(self.len) {
            *slot = v;
        }
        self.len = self.len.saturating_add(1);
    }

    /// The next `n` (at most [`MAX_BLOCK`]) samples' places, to be filled by the caller:
    /// in the buffer when they fit, else in `spill` (and copied by [`Rsi::settle`]).
    #[inline(always)]
    fn next<'s>(&'s mut self, n: usize, spill: &'s mut [u32; MAX_BLOCK as usize]) -> &'s mut [u32] {
        let end = self.len.saturating_add(n);
        if end <= self.buf.len() {
            self.buf.get_mut(self.len..end).unwrap_or_default()
        } else {
            spill.get_mut(..n).unwrap_or_default()
        }
    }

    /// Count the `n` samples [`Rsi::next`] handed out, copying those that fit from `spill`
    /// when they were decoded there.
    #[inline(always)]
    fn settle(&mut self, n: usize, spill: &[u32; MAX_BLOCK as usize]) {
        let end = self.len.saturating_add(n);
        if end > self.buf.len() {
            let fit = self.buf.len().saturating_sub(self.len).min(n);
            if let (Some(dst), Some(src)) = (
                self.buf.get_mut(self.len..self.len.saturating_add(fit)),
                spill.get(..fit),
            ) {
                dst.copy_from_slice(src);
            }
        }
        self.len = end;
    }

    fn zeros(&mut self, n: usize) {
        let end = self.len.saturating_add(n);
        let stop = end.min(self.buf.len());
        if let Some(dst) = self.buf.get_mut(self.len.min(stop)..stop) {
            dst.fill(0);
        }
        self.len = end;
    }
}

/// Decode the AEC stream of `n_samples` samples of `bits` bits in RSIs of `rsi` blocks of
/// `block` samples, writing each RSI's first `layout.keep` samples into `out` as stored, from
/// its start: the bytes written.
fn aec_decode(
    src: &[u8],
    bits: u32,
    block: usize,
    rsi: usize,
    n_samples: usize,
    layout: Layout,
    out: &mut [u8],
) -> Result<usize, FilterError> {
    let id_len = match bits {
        17.. => 5,
        9..=16 => 4,
        _ => 3,
    };
    let id_uncompressed = (1u32 << id_len).saturating_sub(1);
    let xmax = u32::try_from((1u64 << bits).saturating_sub(1)).unwrap_or(u32::MAX);
    let rsi_samples = rsi
        .checked_mul(block)
        .ok_or_else(|| corrupt("RSI too large"))?;
    if block > MAX_BLOCK as usize {
        return Err(corrupt("block larger than 64 samples"));
    }
    let mut r = Bits::new(src);
    let mut done = 0usize;
    let mut at = 0usize;
    // An RSI's length comes from the client data: bounded by what the chunk needs.
    let room = rsi_samples.min(n_samples);
    let mut buf: Vec<u32> = Vec::new();
    buf.try_reserve_exact(room)
        .map_err(|_| FilterError::OutOfMemory {
            filter: "szip",
            bytes: room.saturating_mul(4),
        })?;
    buf.resize(room, 0);
    let mut spill = [0u32; MAX_BLOCK as usize];
    while done < n_samples {
        // One RSI.
        let rsi_end = n_samples.saturating_sub(done).min(rsi_samples);
        let mut s = Rsi {
            buf: buf.get_mut(..rsi_end).unwrap_or_default(),
            len: 0,
        };
        let mut b = 0usize;
        while s.len < rsi_end {
            let with_ref = layout.preprocess && b == 0;
            let id = r.get(id_len)?;
            if id == 0 {
                let second_extension = r.get(1)? == 1;
                if with_ref {
                    s.push(r.get(bits)?);
                }
                if second_extension {
                    let mut i = usize::from(with_ref);
                    while i < block {
                        let m = r.fs()?;
                        // m = s(s + 1)/2 + second, with s = first + second.
                        let &(sum, second) = SE_TABLE
                            .get(m as usize)
                            .ok_or_else(|| corrupt("second extension code out of range"))?;
                        let (sum, second) = (u32::from(sum), u32::from(second));
                        if i % 2 == 0 {
                            s.push(sum.wrapping_sub(second));
                            i = i.saturating_add(1);
                        }
                        s.push(second);
                        i = i.saturating_add(1);
                    }
                    b = b.saturating_add(1);
                } else {
                    let mut blocks = r.fs()?.saturating_add(1);
                    if blocks == ROS {
                        let left_in_rsi = rsi.saturating_sub(b);
                        let left_in_segment = 64usize.saturating_sub(b % 64);
                        blocks =
                            u32::try_from(left_in_rsi.min(left_in_segment)).unwrap_or(u32::MAX);
                    } else if blocks > ROS {
                        blocks = blocks.saturating_sub(1);
                    }
                    let blocks = blocks as usize;
                    let zeros = blocks
                        .saturating_mul(block)
                        .saturating_sub(usize::from(with_ref));
                    if blocks > rsi.saturating_sub(b) {
                        return Err(corrupt("zero blocks past the end of the RSI"));
                    }
                    s.zeros(zeros);
                    b = b.saturating_add(blocks);
                }
            } else if id == id_uncompressed {
                let coded = s.next(block, &mut spill);
                r.take_bits(bits, coded)?;
                s.settle(block, &spill);
                b = b.saturating_add(1);
            } else {
                let k = id.saturating_sub(1);
                if with_ref {
                    s.push(r.get(bits)?);
                }
                // The block's other samples, in place: high parts, then low bits.
                let n = block.saturating_sub(usize::from(with_ref));
                let coded = s.next(n, &mut spill);
                r.high_parts(k, coded)?;
                r.add_low_bits(k, coded)?;
                s.settle(n, &spill);
                b = b.saturating_add(1);
            }
        }
        let decoded = buf.get(..rsi_end).unwrap_or_default();
        done = done.saturating_add(decoded.len());
        // The kept samples only: the padding after them does not change them.
        at = store(
            decoded.get(..layout.keep).unwrap_or(decoded),
            layout,
            xmax,
            out,
            at,
        )
        .ok_or_else(|| corrupt("stream decodes to more samples than the chunk holds"))?;
    }
    Ok(at)
}

/// The chunk's declared size and its stream, the size checked against `limit`.
fn split<'a>(data: &'a [u8], p: &Params, limit: usize) -> Result<(usize, &'a [u8]), FilterError> {
    let (size, stream) = data
        .split_first_chunk::<4>()
        .ok_or_else(|| corrupt("chunk shorter than its 4-byte size"))?;
    let size = u32::from_le_bytes(*size) as usize;
    if size > limit {
        return Err(corrupt(format!(
            "declares {size} bytes, more than the chunk's {limit}"
        )));
    }
    let (planes, _, sample_bytes) = p.samples();
    if !size.is_multiple_of(sample_bytes) || !size.is_multiple_of(planes) {
        return Err(corrupt(format!(
            "{size} bytes is not a whole number of {}-bit pixels",
            p.bits_per_pixel
        )));
    }
    Ok((size, stream))
}

/// Undo the filter, refusing a chunk that declares more than `limit` bytes.
pub fn decompress(data: &[u8], p: &Params, limit: usize) -> Result<Vec<u8>, FilterError> {
    let (size, _) = split(data, p, limit)?;
    let mut out = crate::zeroed("szip", size)?;
    decompress_into(data, p, &mut out)?;
    Ok(out)
}

thread_local! {
    /// This thread's byte planes of 32- and 64-bit pixels (decoded plane by plane, then
    /// put back into elements), kept from one chunk to the next: no allocation, no zeroing
    /// and no fresh pages once it has held a chunk as large, up to [`PLANES_KEPT_MAX`].
    static PLANES: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The most room [`PLANES`] keeps after a chunk: a larger chunk's buffer is freed.
const PLANES_KEPT_MAX: usize = 16 << 20;

/// Undo the filter into `out`, which the chunk must fill exactly: samples of one byte plane
/// per pixel are decoded straight into it; 32- and 64-bit pixels through this thread's kept
/// plane buffer, then unshuffled into it.
pub fn decompress_into(data: &[u8], p: &Params, out: &mut [u8]) -> Result<(), FilterError> {
    let (size, stream) = split(data, p, out.len())?;
    if size != out.len() {
        return Err(corrupt(format!(
            "declares {size} bytes, expected {}",
            out.len()
        )));
    }
    let (planes, bits, sample_bytes) = p.samples();
    let samples = size.checked_div(sample_bytes).unwrap_or(0);
    let ppb = p.pixels_per_block;
    let pps = p.pixels_per_scanline;
    let rsi = pps.div_ceil(ppb);
    let padded_line = rsi.saturating_mul(ppb);
    let lines = samples.div_ceil(pps);
    // A scanline that is not a whole number of blocks is padded to one (an RSI is one padded
    // scanline). Decoding stops at the last sample the chunk holds: the padding of the last
    // scanline is never decoded, so a scanline longer than the chunk sizes nothing.
    let full_lines = lines.saturating_sub(1);
    let coded = if padded_line == pps {
        samples
    } else {
        full_lines
            .saturating_mul(padded_line)
            .saturating_add(samples.saturating_sub(full_lines.saturating_mul(pps)))
    };
    let layout = Layout {
        sample_bytes,
        msb: p.msb,
        preprocess: p.preprocess,
        keep: pps,
    };
    let short = || corrupt("stream decodes to fewer samples than the chunk holds");
    if planes == 1 {
        let written = aec_decode(stream, bits, ppb, rsi, coded, layout, out)?;
        return if written == size {
            Ok(())
        } else {
            Err(short())
        };
    }
    let mut kept = crate::kept::take(&PLANES).unwrap_or_default();
    let result = (|| {
        if let Some(more) = size.checked_sub(kept.len()).filter(|&n| n > 0) {
            crate::reserve(&mut kept, "szip", more)?;
            kept.resize(size, 0);
        }
        let bytes = kept.get_mut(..size).unwrap_or_default();
        let written = aec_decode(stream, bits, ppb, rsi, coded, layout, bytes)?;
        if written != size {
            return Err(short());
        }
        // Byte planes back to elements: the byte shuffle's planes.
        crate::shuffle::unshuffle_into(bytes, planes, out);
        Ok(())
    })();
    crate::kept::keep(&PLANES, kept, PLANES_KEPT_MAX);
    result
}

/// MSB-first bit writer.
struct BitWriter {
    out: Vec<u8>,
    acc: u64,
    /// Bits waiting in the bottom of `acc` (fewer than 8 between writes).
    n: u32,
}

impl BitWriter {
    /// Append the low `k` bits of `v` (`k` at most 32).
    fn put(&mut self, v: u32, k: u32) {
        if k == 0 {
            return;
        }
        let v = u64::from(v) & (u64::MAX >> 64u32.saturating_sub(k));
        self.acc = (self.acc << k) | v;
        self.n = self.n.saturating_add(k);
        while self.n >= 8 {
            self.n = self.n.saturating_sub(8);
            self.out.push((self.acc >> self.n) as u8);
        }
    }

    /// A fundamental sequence: `v` zeros, then a one.
    fn fs(&mut self, mut v: u64) {
        while v >= 32 {
            self.put(0, 32);
            v = v.saturating_sub(32);
        }
        self.put(1, u32::try_from(v).unwrap_or(0).saturating_add(1));
    }

    fn finish(mut self) -> Vec<u8> {
        if self.n > 0 {
            let pad = 8u32.saturating_sub(self.n);
            self.put(0, pad);
        }
        self.out
    }
}

/// Code one block of `values` (the reference sample first when `reference`), choosing the
/// cheapest of the split-sample options (k = 0 is the fundamental sequence) and no compression.
fn encode_block(w: &mut BitWriter, values: &[u32], reference: bool, bits: u32, id_len: u32) {
    let id_uncompressed = (1u32 << id_len).saturating_sub(1);
    let coded = values.get(usize::from(reference)..).unwrap_or_default();
    let uncompressed = u64::from(bits).saturating_mul(values.len() as u64);
    let mut best: Option<(u64, u32)> = None;
    // k runs over the identifiers between the low-entropy (0) and uncompressed (all ones) ones.
    for k in 0..id_uncompressed.saturating_sub(1).min(bits) {
        let cost = coded.iter().fold(0u64, |acc, &d| {
            acc.saturating_add(u64::from(d >> k))
                .saturating_add(1)
                .saturating_add(u64::from(k))
        });
        if best.is_none_or(|(c, _)| cost < c) {
            best = Some((cost, k));
        }
    }
    match best {
        Some((cost, k))
            if cost.saturating_add(if reference { u64::from(bits) } else { 0 }) < uncompressed =>
        {
            w.put(k.saturating_add(1), id_len);
            if reference {
                w.put(values.first().copied().unwrap_or(0), bits);
            }
            for &d in coded {
                w.fs(u64::from(d >> k));
            }
            if k > 0 {
                for &d in coded {
                    w.put(d, k);
                }
            }
        }
        _ => {
            w.put(id_uncompressed, id_len);
            for &v in values {
                w.put(v, bits);
            }
        }
    }
}

/// Apply the filter as libhdf5's szip filter over libaec writes it: the chunk's size, then the
/// AEC stream of its samples (byte planes for 32- and 64-bit pixels; each scanline padded to
/// whole blocks with its last sample, and the last block with the last sample), each block coded
/// with the cheapest split-sample option or stored (zero-block runs and the second extension are
/// never chosen: they are optional to an encoder). `None` when the stream would not be smaller
/// than the chunk (libhdf5's filter fails then, and the optional filter leaves it unfiltered).
pub fn compress(data: &[u8], p: &Params) -> Result<Option<Vec<u8>>, FilterError> {
    let size = data.len();
    let (planes, bits, sample_bytes) = p.samples();
    let Ok(size32) = u32::try_from(size) else {
        return Ok(None);
    };
    if !size.is_multiple_of(sample_bytes) || !size.is_multiple_of(planes) {
        return Err(FilterError::Unsupported {
            filter: "szip",
            what: "writing a chunk that is not a whole number of pixels",
        });
    }
    // Elements to byte planes.
    let transposed;
    let bytes = if planes > 1 {
        let n = size.checked_div(planes).unwrap_or(0);
        let mut t = crate::zeroed("szip", size)?;
        for (i, element) in data.chunks_exact(planes).enumerate() {
            for (j, &b) in element.iter().enumerate() {
                if let Some(o) = t.get_mut(j.saturating_mul(n).saturating_add(i)) {
                    *o = b;
                }
            }
        }
        transposed = t;
        &transposed[..]
    } else {
        data
    };
    let xmax = u32::try_from((1u64 << bits).saturating_sub(1)).unwrap_or(u32::MAX);
    let samples: Vec<u32> = bytes
        .chunks_exact(sample_bytes)
        .map(|c| {
            let v = match (c, p.msb) {
                (&[a], _) => u32::from(a),
                (&[a, b], false) => u32::from(u16::from_le_bytes([a, b])),
                (&[a, b], true) => u32::from(u16::from_be_bytes([a, b])),
                (&[a, b, c, d], false) => u32::from_le_bytes([a, b, c, d]),
                (&[a, b, c, d], true) => u32::from_be_bytes([a, b, c, d]),
                _ => 0,
            };
            v & xmax
        })
        .collect();
    let ppb = p.pixels_per_block;
    let pps = p.pixels_per_scanline;
    let rsi = pps.div_ceil(ppb);
    let padded_line = rsi.saturating_mul(ppb);
    // Every scanline (the last one too) padded to whole blocks with its last sample.
    let mut coded: Vec<u32> = Vec::with_capacity(samples.len().saturating_add(padded_line));
    if padded_line == pps {
        coded.extend_from_slice(&samples);
        let last = coded.last().copied().unwrap_or(0);
        let whole = coded.len().div_ceil(ppb).saturating_mul(ppb);
        coded.resize(whole, last);
    } else {
        for line in samples.chunks(pps) {
            coded.extend_from_slice(line);
            let last = line.last().copied().unwrap_or(0);
            coded.resize(
                coded
                    .len()
                    .saturating_add(padded_line.saturating_sub(line.len())),
                last,
            );
        }
    }
    let id_len = match bits {
        17.. => 5,
        9..=16 => 4,
        _ => 3,
    };
    let mut w = BitWriter {
        out: Vec::with_capacity(size.saturating_add(8)),
        acc: 0,
        n: 0,
    };
    w.out.extend_from_slice(&size32.to_le_bytes());
    let med = (xmax >> 1).saturating_add(1);
    let mut mapped: Vec<u32> = Vec::with_capacity(padded_line);
    for interval in coded.chunks(padded_line) {
        // The reference sample, then each sample's mapped difference from the previous one.
        mapped.clear();
        if p.preprocess {
            let mut prev = interval.first().copied().unwrap_or(0);
            mapped.push(prev);
            for &x in interval.iter().skip(1) {
                let theta = if prev >= med {
                    xmax.saturating_sub(prev)
                } else {
                    prev
                };
                let d = if x >= prev && x.saturating_sub(prev) <= theta {
                    x.saturating_sub(prev).saturating_mul(2)
                } else if x < prev && prev.saturating_sub(x) <= theta {
                    prev.saturating_sub(x).saturating_mul(2).saturating_sub(1)
                } else if prev >= med {
                    xmax.saturating_sub(x)
                } else {
                    x
                };
                mapped.push(d);
                prev = x;
            }
        } else {
            mapped.extend_from_slice(interval);
        }
        for (b, block) in mapped.chunks(ppb).enumerate() {
            encode_block(&mut w, block, p.preprocess && b == 0, bits, id_len);
        }
        if w.out.len() > size.saturating_add(4) {
            return Ok(None);
        }
    }
    let out = w.finish();
    Ok((out.len() <= size.saturating_add(4)).then_some(out))
}

#[cfg(test)]
#[allow(clippy::arithmetic_side_effects)]
mod tests {
    use super::*;

    #[test]
    fn parses_libhdf5_parameters() {
        let p = Params::parse(&[169, 8, 32, 10]).unwrap();
        assert!(p.preprocess && !p.msb);
        assert_eq!(
            (p.pixels_per_block, p.bits_per_pixel, p.pixels_per_scanline),
            (8, 32, 10)
        );
        assert!(Params::parse(&[141, 7, 16, 10]).is_none());
        assert!(Params::parse(&[141, 8, 48, 10]).is_none());
        assert!(Params::parse(&[141, 8, 16]).is_none());
        assert!(Params::parse(&[141, 16, 16, 8]).is_none());
        assert_eq!(SE_TABLE[0], (0, 0));
        assert_eq!(SE_TABLE[1], (1, 0));
        assert_eq!(SE_TABLE[2], (1, 1));
        assert_eq!(SE_TABLE[3], (2, 0));
        assert_eq!(SE_TABLE[5], (2, 2));
        assert_eq!(SE_TABLE[90], (12, 12));
        for (m, &(s, second)) in SE_TABLE.iter().enumerate() {
            let (s, second) = (s as usize, second as usize);
            assert!(second <= s);
            assert_eq!(s * (s + 1) / 2 + second, m);
        }
    }

    #[test]
    fn decodes_hand_coded_blocks() {
        // 8-bit samples, blocks of 8, no predictor. Block 1: uncompressed (id 111) 1..=8.
        // Block 2: split k = 1 (id 010): values 2,3,2,3,... high parts 1 (fs "01"), low bits.
        let mut bits = String::from("111");
        for v in 1..=8u8 {
            bits += &format!("{v:08b}");
        }
        bits += "010";
        for _ in 0..8 {
            bits += "01";
        }
        bits += "01010101";
        // Block 3: zero block run of one block (id 000, 0, fs "1").
        bits += "00001";
        while bits.len() % 8 != 0 {
            bits.push('0');
        }
        let stream: Vec<u8> = bits
            .as_bytes()
            .chunks(8)
            .map(|c| u8::from_str_radix(std::str::from_utf8(c).unwrap(), 2).unwrap())
            .collect();
        let layout = Layout {
            sample_bytes: 1,
            msb: false,
            preprocess: false,
            keep: 32,
        };
        let mut got = vec![0xEEu8; 24];
        assert_eq!(
            aec_decode(&stream, 8, 8, 4, 24, layout, &mut got).unwrap(),
            24
        );
        let mut want: Vec<u8> = (1..=8).collect();
        want.extend([2, 3, 2, 3, 2, 3, 2, 3]);
        want.extend([0; 8]);
        assert_eq!(got, want);
        // Truncated: an error, not a panic.
        for n in 0..stream.len() - 1 {
            let mut got = vec![0u8; 24];
            assert!(
                aec_decode(&stream[..n], 8, 8, 4, 24, layout, &mut got).is_err(),
                "{n}"
            );
        }
    }

    #[test]
    fn compressed_chunks_decode_to_their_input() {
        let mut next = crate::xorshift(0x2545_F491_4F6C_DD1Du64);
        for (mask, ppb, bpp, pps, n) in [
            (169, 8, 8, 1000, 10007),
            (141, 8, 8, 45, 33 * 45),
            (177, 16, 16, 37, 2 * 20 * 37),
            (169, 32, 16, 1024, 5000),
            (141, 4, 32, 250, 250),
            (169, 8, 32, 45, 33 * 45),
            (177, 8, 64, 37, 2 * 20 * 37),
            (141, 16, 64, 1000, 1000),
        ] {
            let p = Params::parse(&[mask, ppb, bpp, pps]).unwrap();
            let size = bpp as usize / 8;
            let data: Vec<u8> = (0..n)
                .flat_map(|i: usize| {
                    let v: u64 = if i % 97 < 10 {
                        next()
                    } else {
                        (i as u64 / 7) % 50
                    };
                    v.to_le_bytes()[..size].to_vec()
                })
                .collect();
            let z = compress(&data, &p).unwrap().unwrap();
            assert!(z.len() < data.len());
            assert!(
                decompress(&z, &p, data.len()).unwrap() == data,
                "{mask} {ppb} {bpp} {pps}"
            );
        }
        // Noise does not shrink: left to the pipeline.
        let p = Params::parse(&[141, 8, 8, 100]).unwrap();
        let noise: Vec<u8> = (0..1000).map(|_| next() as u8).collect();
        assert!(compress(&noise, &p).unwrap().is_none());
    }

    /// The unit-delay predictor as CCSDS 121.0-B states it, in wide integers: the model the
    /// branch-free [`emit`] is checked against.
    fn unmap_model(values: &[u32], bits: u32) -> Vec<u32> {
        let xmax = (1i64 << bits) - 1;
        let mut x = i64::from(values[0]) & xmax;
        let mut out = vec![x as u32];
        for &d in &values[1..] {
            let d = i64::from(d);
            let theta = x.min(xmax - x);
            x = if d <= 2 * theta {
                if d % 2 == 0 {
                    x + d / 2
                } else {
                    x - (d + 1) / 2
                }
            } else if theta == x {
                // Nearer the bottom: the residual goes up past theta.
                d.rem_euclid(xmax + 1)
            } else {
                (xmax - d).rem_euclid(xmax + 1)
            };
            out.push(x as u32);
        }
        out
    }

    #[test]
    fn predictor_matches_the_spec_model() {
        let mut next = crate::xorshift(0x9E37_79B9_7F4A_7C15u64);
        for bits in [1, 3, 8, 12, 16, 24, 31, 32] {
            let xmax = ((1u64 << bits) - 1) as u32;
            for round in 0..40 {
                // Runs of zeros (whole groups of sixteen and parts of them), small and large
                // residuals, and (round 3 on) residuals past the range, as a corrupt stream has.
                let n = 1 + (next() % 300) as usize;
                let mut values = Vec::with_capacity(n);
                while values.len() < n {
                    let len = 1 + (next() % 40) as usize;
                    let kind = next() % 4;
                    for _ in 0..len {
                        values.push(match kind {
                            0 => 0,
                            1 => (next() % 4) as u32 & xmax,
                            2 => next() as u32 & xmax,
                            _ if round % 3 == 2 => next() as u32,
                            _ => next() as u32 & xmax,
                        });
                    }
                }
                values.truncate(n);
                let want: Vec<u8> = unmap_model(&values, bits)
                    .iter()
                    .flat_map(|v| v.to_le_bytes())
                    .collect();
                let mut got = vec![0xEEu8; n * 4];
                emit(&values, &mut got, true, xmax, u32::to_le_bytes);
                assert_eq!(got, want, "{bits} bits, round {round}");
            }
        }
    }

    #[test]
    fn chunks_decode_into_place_as_they_decode_alone() {
        // Byte planes with zero blocks (a constant plane), noise (uncompressed blocks), smooth
        // runs (split samples), scanlines that are not whole blocks, and last scanlines cut
        // short inside a block: decoded into a place, through the kept plane buffer when the
        // pixels are 32 or 64 bits, as `decompress` decodes them, with every place size but
        // the chunk's refused.
        let mut next = crate::xorshift(0x2545_F491_4F6C_DD1Du64);
        for round in 0..60 {
            let bpp = [8u32, 16, 32, 64][round % 4];
            let ppb = [8u32, 16, 32][(round / 4) % 3];
            let pps = ppb + (next() % 200) as u32;
            let mask = if round % 5 == 0 { 141 } else { 169 };
            let p = Params::parse(&[mask, ppb, bpp, pps]).unwrap();
            let size = bpp as usize / 8;
            let n = 1 + (next() % 3000) as usize;
            let data: Vec<u8> = (0..n)
                .flat_map(|i| {
                    let v: u64 = match (i / 100) % 3 {
                        0 => 0x3F80_0000,
                        1 => next(),
                        _ => 0x4000_0000 + (i as u64 % 37),
                    };
                    v.to_le_bytes()[..size].to_vec()
                })
                .collect();
            let Some(z) = compress(&data, &p).unwrap() else {
                continue;
            };
            let mut out = vec![0xA5u8; data.len()];
            decompress_into(&z, &p, &mut out).unwrap();
            assert_eq!(out, data, "{bpp} {ppb} {pps} {n}");
            assert_eq!(decompress(&z, &p, data.len()).unwrap(), data);
            for wrong in [data.len() - size, data.len() + size] {
                let mut place = vec![0u8; wrong];
                assert!(decompress_into(&z, &p, &mut place).is_err());
            }
            // A cut stream is an error, or decodes whole when it lost only the padding of the
            // last scanline (never decoded): never other bytes.
            for cut in (4..z.len()).step_by(7) {
                let mut place = vec![0u8; data.len()];
                if decompress_into(&z[..cut], &p, &mut place).is_ok() {
                    assert_eq!(place, data, "{cut}");
                }
            }
            assert!(decompress_into(&z[..4], &p, &mut out).is_err());
        }
    }

    #[test]
    fn garbage_never_panics() {
        let mut next = crate::xorshift(0x2545_F491_4F6C_DD1Du64);
        let p = Params::parse(&[141, 16, 16, 100]).unwrap();
        let p64 = Params::parse(&[173, 8, 64, 37]).unwrap();
        for round in 0..2000 {
            let len = (round % 97) + 4;
            let mut junk: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            junk[..4].copy_from_slice(&800u32.to_le_bytes());
            for p in [&p, &p64] {
                if let Ok(d) = decompress(&junk, p, 800) {
                    assert_eq!(d.len(), 800);
                }
            }
        }
    }
}
