//! The deflate filter (1): a zlib stream (RFC 1950) at the level of the client data.

use std::cell::RefCell;
use std::io::{Read, Write};

use flate2::read::ZlibDecoder;
use flate2::write::ZlibEncoder;
use flate2::{Compression, Decompress, FlushDecompress, Status};

use super::FilterError;

fn corrupt(reason: impl Into<String>) -> FilterError {
    FilterError::Corrupt {
        filter: "deflate",
        reason: reason.into(),
    }
}

/// Compress at `level` (0..=9).
pub fn compress(data: &[u8], level: u32) -> Result<Vec<u8>, FilterError> {
    let mut e = ZlibEncoder::new(
        Vec::with_capacity((data.len() / 2).saturating_add(64)),
        Compression::new(level),
    );
    e.write_all(data)
        .and_then(|()| e.finish())
        .map_err(|err| corrupt(err.to_string()))
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
        return Err(corrupt(format!("inflates past {limit} bytes")));
    }
    Ok(out)
}

thread_local! {
    /// This thread's inflate state, kept from one chunk to the next and reset for each: a
    /// new one allocates zlib-rs's state (its tables and window) again.
    static INFLATE: RefCell<Option<Decompress>> = const { RefCell::new(None) };
}

/// Decompress `data` to exactly `out.len()` bytes written into `out`: one inflate call over
/// the whole stream and the whole output, so the decoder copies nothing into a window (a
/// stream that finishes in one call needs none) and the output is neither grown nor zeroed.
/// Bytes after the stream's end are ignored, as libhdf5's filter ignores them.
pub fn decompress_into(data: &[u8], out: &mut [u8]) -> Result<(), FilterError> {
    let kept = INFLATE.try_with(|cell| {
        let mut slot = cell.try_borrow_mut().ok()?;
        let d = match slot.as_mut() {
            Some(d) => {
                d.reset(true);
                d
            }
            None => slot.insert(Decompress::new(true)),
        };
        Some(inflate(d, data, out))
    });
    match kept {
        Ok(Some(done)) => done,
        // The thread's locals are torn down, or a call further up holds the state.
        _ => inflate(&mut Decompress::new(true), data, out),
    }
}

/// [`decompress_into`] with the inflate state `d` (fresh or reset).
fn inflate(d: &mut Decompress, data: &[u8], out: &mut [u8]) -> Result<(), FilterError> {
    let want = out.len();
    let status = d
        .decompress(data, out, FlushDecompress::Finish)
        .map_err(|e| corrupt(e.to_string()))?;
    let got = usize::try_from(d.total_out()).unwrap_or(usize::MAX);
    match status {
        Status::StreamEnd if got == want => Ok(()),
        Status::StreamEnd => Err(corrupt(format!("inflates to {got} bytes, expected {want}"))),
        // The output is full but the stream goes on: more bytes than the chunk holds, or
        // only its checksum left (a stream that ends without it is truncated).
        _ if got == want => {
            let mut more = [0u8; 1];
            let rest = data
                .get(usize::try_from(d.total_in()).unwrap_or(usize::MAX)..)
                .unwrap_or_default();
            match d.decompress(rest, &mut more, FlushDecompress::Finish) {
                Ok(Status::StreamEnd) if d.total_out() == want as u64 => Ok(()),
                Ok(_) if d.total_out() > want as u64 => {
                    Err(corrupt(format!("inflates past {want} bytes")))
                }
                Ok(_) => Err(corrupt("stream ends before its checksum")),
                Err(e) => Err(corrupt(e.to_string())),
            }
        }
        _ => Err(corrupt(format!(
            "stream ends after {got} bytes, expected {want}"
        ))),
    }
}
