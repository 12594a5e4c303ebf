//! The deflate filter (1): a zlib stream (RFC 1950) at the level of the client data.

use std::io::{Read, Write};

use flate2::Compression;
use flate2::read::ZlibDecoder;
use flate2::write::ZlibEncoder;

use super::FilterError;

/// Compress at `level` (0..=9).
pub fn compress(data: &[u8], level: u32) -> Result<Vec<u8>, FilterError> {
    let mut e = ZlibEncoder::new(
        Vec::with_capacity((data.len() / 2).saturating_add(64)),
        Compression::new(level),
    );
    e.write_all(data)
        .and_then(|()| e.finish())
        .map_err(|err| FilterError::Corrupt {
            filter: "deflate",
            reason: err.to_string(),
        })
}

/// Decompress, refusing to produce more than `limit` bytes. The output's room (`limit` and
/// one byte, to see an overrun) is allocated fallibly up front, so the decoder never grows it.
pub fn decompress(data: &[u8], limit: usize) -> Result<Vec<u8>, FilterError> {
    let mut out = crate::buffer("deflate", limit.saturating_add(1))?;
    ZlibDecoder::new(data)
        .take(u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1))
        .read_to_end(&mut out)
        .map_err(|err| crate::stream_error("deflate", &err, limit))?;
    if out.len() > limit {
        return Err(FilterError::Corrupt {
            filter: "deflate",
            reason: format!("inflates past {limit} bytes"),
        });
    }
    Ok(out)
}
