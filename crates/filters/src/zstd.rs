//! The Zstandard filter (32015): each chunk is one Zstandard frame; client data: [level].
//!
//! Frames decode with `ruzstd` (pure Rust). Encoding also uses `ruzstd`, whose only compressing
//! matcher is its fastest one (close to libzstd's level 1): every level writes that frame. The
//! level stays in the client data as given, so the file says what was asked for; the frames
//! are valid Zstandard (with their content size, which the reference filter needs to size its
//! output), larger than libzstd's at higher levels, and not byte-identical to them.

use std::io::Read;

use ruzstd::decoding::StreamingDecoder;
use ruzstd::encoding::{CompressionLevel, compress};

use super::FilterError;

fn corrupt(reason: impl Into<String>) -> FilterError {
    FilterError::Corrupt {
        filter: "zstd",
        reason: reason.into(),
    }
}

const MAGIC: [u8; 4] = 0xFD2F_B528u32.to_le_bytes();

/// Append one Zstandard frame of `data` to `out`. `_level` is the level asked for (see the
/// module documentation: every level encodes as ruzstd's fastest).
///
/// ruzstd writes a frame header without the content size; the reference filter sizes its
/// output from that field (and fails without it), so the header is rewritten with it
/// (RFC 8878 section 3.1.1.1: the Frame_Content_Size_Flag of the descriptor, then the field
/// after the window descriptor). The blocks that follow do not depend on the header.
pub fn compress_into(data: &[u8], _level: i32, out: &mut Vec<u8>) {
    let mut frame = Vec::with_capacity(data.len() / 2);
    compress(data, &mut frame, CompressionLevel::Fastest);
    // ruzstd's header: magic, a descriptor with no content size, no single segment and no
    // dictionary (only the checksum bit may be set), a window descriptor.
    match frame.split_first_chunk::<6>() {
        Some((&[m0, m1, m2, m3, descriptor, window], blocks))
            if [m0, m1, m2, m3] == MAGIC && descriptor & !0x04 == 0 =>
        {
            let n = data.len() as u64;
            out.extend_from_slice(&MAGIC);
            match u16::try_from(n.wrapping_sub(256)) {
                Ok(short) if n >= 256 => {
                    out.extend([descriptor | 0x40, window]);
                    out.extend_from_slice(&short.to_le_bytes());
                }
                _ => match u32::try_from(n) {
                    Ok(word) => {
                        out.extend([descriptor | 0x80, window]);
                        out.extend_from_slice(&word.to_le_bytes());
                    }
                    Err(_) => {
                        out.extend([descriptor | 0xC0, window]);
                        out.extend_from_slice(&n.to_le_bytes());
                    }
                },
            }
            out.extend_from_slice(blocks);
        }
        _ => out.extend_from_slice(&frame),
    }
}

/// One Zstandard frame of `data`.
pub fn compress_chunk(data: &[u8], level: i32) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() / 2);
    compress_into(data, level, &mut out);
    out
}

/// The window a frame may always declare, whatever its content: a streaming encoder that did not
/// know the size declares its level's window (libzstd: at most 8 MiB up to level 19; ruzstd's
/// fastest: 128 KiB even for a few bytes).
const MIN_WINDOW_ALLOWED: u64 = 1 << 23;

/// Check the frame header's window and content sizes against `limit` before ruzstd sees them:
/// ruzstd reserves the declared window (up to 100 MiB) when it starts a frame, so a frame that
/// declares more than its chunk can hold would size an allocation from the file (RFC 8878
/// section 3.1.1.1).
fn check_frame_header(src: &[u8], limit: usize) -> Result<(), FilterError> {
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
        _ => Ok(()),
    }
}

/// Decode the frames of `src`, refusing more than `limit` bytes, appended to `out`.
pub fn decompress_into(src: &[u8], limit: usize, out: &mut Vec<u8>) -> Result<(), FilterError> {
    check_frame_header(src, limit)?;
    let mut decoder = StreamingDecoder::new(src).map_err(|e| corrupt(e.to_string()))?;
    let before = out.len();
    // All the room the frames may fill (and a byte to see an overrun), allocated fallibly up
    // front: the decoder never grows `out`.
    crate::reserve(out, "zstd", limit.saturating_add(1))?;
    (&mut decoder)
        .take(u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1))
        .read_to_end(out)
        .map_err(|e| crate::stream_error("zstd", &e, limit))?;
    if out.len().saturating_sub(before) > limit {
        return Err(corrupt(format!("decodes past {limit} bytes")));
    }
    Ok(())
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
    fn roundtrip_and_reject_corruption() {
        let data: Vec<u8> = (0..50_000u32).flat_map(|i| (i / 9).to_le_bytes()).collect();
        let c = compress_chunk(&data, 3);
        assert!(c.len() < data.len() / 2, "{} bytes", c.len());
        assert_eq!(decompress(&c, data.len()).unwrap(), data);
        // The header carries the content size (descriptor flag 2: four bytes).
        assert_eq!(&c[..4], &MAGIC);
        assert_eq!(c[4] & 0xC0, 0x80);
        assert_eq!(
            u32::from_le_bytes(c[6..10].try_into().unwrap()) as usize,
            data.len()
        );
        // A frame declaring a 128 MiB window for a chunk of 200 kB, or more content than the
        // chunk, is refused
        // before ruzstd reserves anything.
        let mut huge_window = c.clone();
        huge_window[4] &= !0xC0;
        huge_window.splice(6..10, []);
        huge_window[5] = 17 << 3;
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
