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

/// Append one Zstandard frame of `data` to `out`. `_level` is the level asked for (see the
/// module documentation: every level encodes as ruzstd's fastest).
pub fn compress_into(data: &[u8], _level: i32, out: &mut Vec<u8>) {
    compress(data, out, CompressionLevel::Fastest);
}

/// One Zstandard frame of `data`.
pub fn compress_chunk(data: &[u8], level: i32) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() / 2);
    compress_into(data, level, &mut out);
    out
}

/// Decode the frames of `src`, refusing more than `limit` bytes, appended to `out`.
pub fn decompress_into(src: &[u8], limit: usize, out: &mut Vec<u8>) -> Result<(), FilterError> {
    let mut decoder = StreamingDecoder::new(src).map_err(|e| corrupt(e.to_string()))?;
    let before = out.len();
    out.reserve(limit.min(1 << 24));
    (&mut decoder)
        .take(u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1))
        .read_to_end(out)
        .map_err(|e| corrupt(e.to_string()))?;
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
