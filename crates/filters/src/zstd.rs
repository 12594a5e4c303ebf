//! The Zstandard filter (32015): each chunk is one Zstandard frame; client data: [level].
//!
//! Frames go through `rust-zstd` (pure Rust, a port of libzstd's algorithms): every level
//! from the negative fast levels to 22 compresses with libzstd's strategy for it, and frames
//! carry their content size (the reference filter sizes its output from it, and fails
//! without it), as libzstd's one-shot `ZSTD_compress` writes them. Decoding is bounded by
//! the chunk's size: the frame header is checked first, then the decoder writes into a
//! buffer of the chunk's size and one byte more, never past it. Up to level 15 (strategies up
//! to btlazy2) frames are written by [`frame`], which runs rust-zstd's stages itself so that
//! blocks are coded straight into the output; its frames are rust-zstd's bytes.

use super::FilterError;

fn corrupt(reason: impl Into<String>) -> FilterError {
    FilterError::Corrupt {
        filter: "zstd",
        reason: reason.into(),
    }
}

const MAGIC: [u8; 4] = 0xFD2F_B528u32.to_le_bytes();

mod frame;

/// The levels [`frame::Frames`] writes (those its tests compare with rust-zstd's frames), where
/// their strategy is one it handles.
const FRAME_LEVELS: std::ops::RangeInclusive<i32> = -7..=15;

thread_local! {
    /// This thread's frame coder: kept across chunks, so that its context (match state, hash
    /// tables, sequence and entropy buffers, sized by the first chunk) is reset for each frame
    /// instead of allocated and zeroed again. Its frames are the same bytes as a one-off
    /// compressor's.
    static FRAMES: std::cell::RefCell<Option<frame::Frames>> =
        const { std::cell::RefCell::new(None) };
    /// This thread's compressor for the levels [`frame::Frames`] leaves to rust-zstd, and the
    /// level it was made for.
    static COMPRESSOR: std::cell::RefCell<Option<(i32, rust_zstd::Compressor)>> =
        const { std::cell::RefCell::new(None) };
}

/// Append one Zstandard frame of `data` at `level` (libzstd's numbering: 0 is the default,
/// 3; negative levels are the fast ones) to `out`.
pub fn compress_into(data: &[u8], level: i32, out: &mut Vec<u8>) {
    let cparams = rust_zstd::compress::CParams::for_level(level, data.len());
    if FRAME_LEVELS.contains(&level) && frame::Frames::handles(&cparams) {
        let done = FRAMES.try_with(|cell| {
            let Ok(mut slot) = cell.try_borrow_mut() else {
                return false;
            };
            slot.get_or_insert_with(|| frame::Frames::new(cparams))
                .compress(data, cparams, out);
            true
        });
        if done != Ok(true) {
            frame::Frames::new(cparams).compress(data, cparams, out);
        }
        return;
    }
    let fresh = || {
        rust_zstd::Compressor::new(rust_zstd::CompressOptions {
            level,
            ..rust_zstd::CompressOptions::default()
        })
    };
    let reused = COMPRESSOR.try_with(|cell| {
        let Ok(mut slot) = cell.try_borrow_mut() else {
            return false;
        };
        match &mut *slot {
            Some((l, c)) if *l == level => c.compress(data, out),
            _ => {
                let mut c = fresh();
                c.compress(data, out);
                *slot = Some((level, c));
            }
        }
        true
    });
    // Not on this thread (its locals torn down, or a compression already running on it).
    if reused != Ok(true) {
        fresh().compress(data, out);
    }
}

/// One Zstandard frame of `data`.
pub fn compress_chunk(data: &[u8], level: i32) -> Vec<u8> {
    let mut out = Vec::new();
    compress_into(data, level, &mut out);
    out
}

/// The window a frame may always declare, whatever its content: a streaming encoder that did not
/// know the size declares its level's window (libzstd: at most 8 MiB up to level 19).
const MIN_WINDOW_ALLOWED: u64 = 1 << MIN_WINDOW_LOG;
const MIN_WINDOW_LOG: u32 = 23;

/// Check the frame header's window and content sizes against `limit` before the decoder sees
/// them: a streaming decoder reserves the declared window when it starts a frame, so a frame
/// that declares more than its chunk can hold would size an allocation from the file (RFC 8878
/// section 3.1.1.1).
/// Returns the header's length and the content size it declares.
fn check_frame_header(src: &[u8], limit: usize) -> Result<(usize, Option<u64>), FilterError> {
    let Some((&[m0, m1, m2, m3, descriptor], rest)) = src.split_first_chunk::<5>() else {
        return Err(corrupt("frame shorter than its header"));
    };
    if [m0, m1, m2, m3] != MAGIC {
        return Err(corrupt("not a Zstandard frame"));
    }
    let single_segment = descriptor & 0x20 != 0;
    let (window, rest) = if single_segment {
        (None, rest)
    } else {
        let (&w, rest) = rest
            .split_first()
            .ok_or_else(|| corrupt("truncated frame header"))?;
        // Window_Descriptor: exponent in the top five bits, eighths in the low three.
        let base = 1u64 << (10 + u32::from(w >> 3));
        (
            Some(base.saturating_add((base / 8).saturating_mul(u64::from(w & 7)))),
            rest,
        )
    };
    let dict_len = match descriptor & 3 {
        0 => 0,
        1 => 1,
        2 => 2,
        _ => 4,
    };
    let rest = rest
        .get(dict_len..)
        .ok_or_else(|| corrupt("truncated frame header"))?;
    let content = match (descriptor >> 6, single_segment) {
        (0, false) => None,
        (0, true) => rest.first().map(|&b| u64::from(b)),
        (1, _) => rest
            .first_chunk::<2>()
            .map(|b| u64::from(u16::from_le_bytes(*b)).saturating_add(256)),
        (2, _) => rest
            .first_chunk::<4>()
            .map(|b| u64::from(u32::from_le_bytes(*b))),
        _ => rest.first_chunk::<8>().map(|b| u64::from_le_bytes(*b)),
    };
    if descriptor >> 6 != 0 || single_segment {
        content.ok_or_else(|| corrupt("truncated frame header"))?;
    }
    let content_len = match (descriptor >> 6, single_segment) {
        (0, false) => 0,
        (0, true) => 1,
        (1, _) => 2,
        (2, _) => 4,
        _ => 8,
    };
    let header = src
        .len()
        .saturating_sub(rest.len())
        .saturating_add(content_len);
    let limit = u64::try_from(limit).unwrap_or(u64::MAX);
    if let Some(n) = content.filter(|&n| n > limit) {
        return Err(corrupt(format!(
            "frame declares {n} bytes, more than the chunk's {limit}"
        )));
    }
    let allowed = limit.saturating_mul(2).max(MIN_WINDOW_ALLOWED);
    match window.or(content) {
        Some(w) if w > allowed => Err(corrupt(format!(
            "frame declares a window of {w} bytes for a chunk of {limit}"
        ))),
        _ => Ok((header, content)),
    }
}

/// Whether `src` is one frame, whose header takes `header` bytes, and nothing after it: its
/// blocks' three-byte headers lead to its end (RFC 8878 section 3.1.1.2).
fn is_single_frame(src: &[u8], header: usize) -> bool {
    let Some(&descriptor) = src.get(4) else {
        return false;
    };
    let mut at = header;
    loop {
        let Some(&[b0, b1, b2]) = src.get(at..).and_then(|s| s.first_chunk::<3>()) else {
            return false;
        };
        let word = u32::from_le_bytes([b0, b1, b2, 0]);
        let stored = match (word >> 1) & 3 {
            1 => 1,
            3 => return false,
            _ => (word >> 3) as usize,
        };
        at = at.saturating_add(3).saturating_add(stored);
        if word & 1 != 0 {
            break;
        }
    }
    let checksum = if descriptor & 0x04 != 0 { 4 } else { 0 };
    at.saturating_add(checksum) == src.len()
}

/// What the one-pass decoder reserves past the content: a block and a copy's overrun.
const ONE_PASS_SLACK: usize = (128 << 10) + 64;

/// Decode the frames of `src`, refusing more than `limit` bytes, appended to `out`.
pub fn decompress_into(src: &[u8], limit: usize, out: &mut Vec<u8>) -> Result<(), FilterError> {
    let (header, content) = check_frame_header(src, limit)?;
    let before = out.len();
    // One frame (what the reference filter writes) that declares its content size (checked
    // against the chunk above): decoded in one pass straight into the output, by a decoder
    // that reserves that size and a block (fallibly) and fails as soon as a block takes the
    // content past it. Four times faster than the streaming path below, which goes through
    // a window buffer of its own (fresh pages on every call) and copies out of it.
    let one_pass = content.filter(|_| is_single_frame(src, header));
    if let Some(content) = one_pass {
        let room = usize::try_from(content)
            .unwrap_or(usize::MAX)
            .saturating_add(ONE_PASS_SLACK);
        let mut decoder = rust_zstd::Decompressor::new();
        if before == 0 {
            crate::reserve(out, "zstd", room)?;
            decoder.decompress_into(src, out).map_err(corrupt)?;
        } else {
            let mut tmp = crate::buffer("zstd", room)?;
            decoder.decompress_into(src, &mut tmp).map_err(corrupt)?;
            if tmp.len() > limit {
                return Err(corrupt(format!("decodes past {limit} bytes")));
            }
            crate::reserve(out, "zstd", tmp.len())?;
            out.extend_from_slice(&tmp);
        }
        if out.len().saturating_sub(before) > limit {
            out.truncate(before);
            return Err(corrupt(format!("decodes past {limit} bytes")));
        }
        return Ok(());
    }
    // All the room the frames may fill (and a byte to see an overrun), allocated fallibly up
    // front: the decoder writes into it and never past it.
    let room = limit.saturating_add(1);
    crate::reserve(out, "zstd", room)?;
    out.resize(before.saturating_add(room), 0);
    let dst = out.get_mut(before..).unwrap_or_default();
    let mut decoder = rust_zstd::Decompressor::new();
    // Later frames' windows too (the first one's was checked above): no larger than the
    // first's allowance, rounded up to a power of two (logs 23 to 30).
    let allowed = limit.saturating_mul(2).max(1 << MIN_WINDOW_LOG);
    let log = usize::BITS
        .saturating_sub(allowed.saturating_sub(1).leading_zeros())
        .clamp(MIN_WINDOW_LOG, 30);
    decoder.set_window_log_max(log);
    let (mut read, mut written) = (0usize, 0usize);
    // Each call reads and writes what it can; one that moves neither has nothing left to do
    // (its input or its room is used up).
    loop {
        let (r, w) = (read, written);
        decoder
            .decompress_stream(src, &mut read, dst, &mut written)
            .map_err(corrupt)?;
        if (read, written) == (r, w) || read >= src.len() && written >= dst.len() {
            break;
        }
    }
    out.truncate(before.saturating_add(written));
    if written > limit {
        return Err(corrupt(format!("decodes past {limit} bytes")));
    }
    if read < src.len() {
        return Err(corrupt("bytes left after the frames"));
    }
    // The input ends between frames, all their content written out.
    decoder.finish().map_err(corrupt)
}

thread_local! {
    /// This thread's buffer for the chunks [`decompress_to_slice`] decodes: its room is kept
    /// from chunk to chunk (the decoder clears it and keeps its capacity), so that a chunk
    /// takes no allocation once the buffer has held one as large, up to [`KEPT_MAX`].
    static DECODED: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The most room [`DECODED`] keeps after a chunk: a larger chunk's buffer is freed.
const KEPT_MAX: usize = 16 << 20;

/// Decode `src` to exactly `out.len()` bytes written into `out`, through this thread's kept
/// buffer (the decoder writes into a `Vec` only), then copied.
pub fn decompress_to_slice(src: &[u8], out: &mut [u8]) -> Result<(), FilterError> {
    let mut buf = crate::kept::take(&DECODED).unwrap_or_default();
    buf.clear();
    let decoded = decompress_exact(src, out.len(), &mut buf).and_then(|()| {
        if buf.len() == out.len() {
            out.copy_from_slice(&buf);
            Ok(())
        } else {
            Err(corrupt(format!(
                "decodes to {} bytes, expected {}",
                buf.len(),
                out.len()
            )))
        }
    });
    crate::kept::keep(&DECODED, buf, KEPT_MAX);
    decoded
}

/// Decode `src` to exactly `len` bytes appended to `out`.
pub fn decompress_exact(src: &[u8], len: usize, out: &mut Vec<u8>) -> Result<(), FilterError> {
    let before = out.len();
    decompress_into(src, len, out)?;
    let got = out.len().saturating_sub(before);
    if got != len {
        return Err(corrupt(format!("decodes to {got} bytes, expected {len}")));
    }
    Ok(())
}

/// Undo the filter, refusing more than `limit` bytes.
pub fn decompress(data: &[u8], limit: usize) -> Result<Vec<u8>, FilterError> {
    let mut out = Vec::new();
    decompress_into(data, limit, &mut out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reused_compressor_writes_one_off_frames() {
        // The thread's compressor, kept across chunks and levels, writes the bytes a fresh one
        // writes: chunks of other contents and sizes in turn, the level changing between them.
        let a: Vec<u8> = (0..300_000u32)
            .flat_map(|i| (i / 7).to_le_bytes())
            .collect();
        let b: Vec<u8> = (0..70_000u32)
            .map(|i| (i.wrapping_mul(i) % 253) as u8)
            .collect();
        for (data, level) in [(&a, 3), (&b, 3), (&a, 3), (&b, 19), (&a, -5), (&a, 3)] {
            assert_eq!(
                compress_chunk(data, level),
                rust_zstd::compress(data, level),
                "{level}"
            );
        }
    }

    #[test]
    fn roundtrip_and_reject_corruption() {
        let data: Vec<u8> = (0..50_000u32).flat_map(|i| (i / 9).to_le_bytes()).collect();
        let c = compress_chunk(&data, 3);
        assert!(c.len() < data.len() / 2, "{} bytes", c.len());
        assert_eq!(decompress(&c, data.len()).unwrap(), data);
        // The header carries the content size (descriptor flag 2: four bytes, after the
        // window byte unless the frame is a single segment).
        assert_eq!(&c[..4], &MAGIC);
        assert_eq!(c[4] & 0xC0, 0x80);
        let at = if c[4] & 0x20 != 0 { 5 } else { 6 };
        assert_eq!(
            u32::from_le_bytes(c[at..at + 4].try_into().unwrap()) as usize,
            data.len()
        );
        // A frame declaring a 128 MiB window for a chunk of 200 kB, or more content than the
        // chunk, is refused before the decoder reserves anything.
        let mut huge_window = c.clone();
        huge_window.splice(5..at + 4, [17 << 3]);
        huge_window[4] &= !0xE0;
        assert!(
            decompress(&huge_window, data.len())
                .unwrap_err()
                .to_string()
                .contains("window")
        );
        assert!(
            decompress(&c, 1000)
                .unwrap_err()
                .to_string()
                .contains("declares")
        );
        for n in [0, 1, 255, 256, 65791, 65792, 70_000] {
            let small = vec![5u8; n];
            assert_eq!(
                decompress(&compress_chunk(&small, 1), n).unwrap(),
                small,
                "{n}"
            );
        }
        assert!(decompress(&c, data.len() - 1).is_err());
        // Two frames (the streaming path): their contents in order, bounded by the limit.
        let second: Vec<u8> = (0..30_000u32).map(|i| (i % 251) as u8).collect();
        let mut two = c.clone();
        two.extend_from_slice(&compress_chunk(&second, 1));
        let both = decompress(&two, data.len() + second.len()).unwrap();
        assert_eq!(both, [&data[..], &second[..]].concat());
        assert!(decompress(&two, data.len() + second.len() - 1).is_err());
        // Appended to what is already there (as Blosc's splits are).
        let mut out = vec![7u8; 3];
        decompress_into(&c, data.len(), &mut out).unwrap();
        assert_eq!(&out[3..], &data[..]);
        // A frame without a content size whose RLE blocks (4 bytes each) declare 40 x 128 KiB
        // is refused at the chunk's size, with no more than that decoded.
        let mut rle = MAGIC.to_vec();
        rle.extend([0x00, 7 << 3]);
        for i in 0..40u32 {
            let header = (128 << 10 << 3) | (1 << 1) | u32::from(i == 39);
            rle.extend_from_slice(&header.to_le_bytes()[..3]);
            rle.push(0xAB);
        }
        assert_eq!(decompress(&rle, 40 << 17).unwrap(), vec![0xAB; 40 << 17]);
        assert!(
            decompress(&rle, 200_000)
                .unwrap_err()
                .to_string()
                .contains("past")
        );
        // The same blocks under a header declaring 200 000 bytes (the one-pass path): refused
        // once a block takes the content past it.
        let mut declared = MAGIC.to_vec();
        declared.extend([0x80, 7 << 3]);
        declared.extend_from_slice(&200_000u32.to_le_bytes());
        declared.extend_from_slice(&rle[6..]);
        assert!(decompress(&declared, 200_000).is_err());
        assert!(decompress(&declared, 40 << 17).is_err());
        for n in 0..c.len().min(400) {
            assert!(decompress(&c[..n], data.len()).is_err(), "prefix {n}");
        }
        for i in 0..c.len().min(400) {
            let mut bad = c.clone();
            bad[i] ^= 0x3c;
            if let Ok(d) = decompress(&bad, data.len()) {
                assert!(d.len() <= data.len());
            }
        }
    }
}
