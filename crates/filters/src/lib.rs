//! The filter pipeline: deflate (1), shuffle (2), fletcher32 (3), szip (4), LZO (305), bzip2 (307), Blosc (32001), Blosc2 (32026), LZF (32000), LZ4 (32004),
//! bitshuffle (32008) and Zstandard (32015), applied in pipeline order when writing a chunk and
//! in reverse when reading it. A set bit `i` of a chunk's filter mask means filter `i` was
//! skipped for that chunk. Any other filter is [`FilterError::Unknown`], named as the HDF5
//! filter registry names it.
//!
//! This crate knows the on-disk encoding of chunks, nothing of files: it depends on
//! `h5chunk-format` for the Filter Pipeline message only. Every decoder is bounded by the size
//! the chunk must decode to; a size a chunk declares is checked against it before it sizes an
//! allocation, and every buffer is allocated fallibly: one the process cannot have (a memory or
//! address-space limit) is [`FilterError::OutOfMemory`], not an abort.
//!
//! ```
//! use h5chunk_filters::Pipeline;
//! use h5chunk_format::message::{Filter, FilterPipeline, PipelineVersion, filter_pipeline::id};
//!
//! // Bitshuffle with LZ4 blocks over 4-byte elements, as hdf5plugin's `Bitshuffle()` stores it.
//! let message = FilterPipeline {
//!     version: PipelineVersion::V2,
//!     filters: vec![Filter::new(PipelineVersion::V2, id::BITSHUFFLE, 1, vec![0, 4, 4, 0, 2])],
//! };
//! let pipeline = Pipeline::new(&message, 4)?;
//! let chunk: Vec<u8> = (0..1024u32).flat_map(|i| (i / 10).to_le_bytes()).collect();
//! let (stored, mask) = pipeline.encode(&chunk)?;
//! assert!(stored.len() < chunk.len() / 4);
//! assert_eq!(pipeline.decode(stored, mask, chunk.len())?, chunk);
//! # Ok::<(), h5chunk_filters::FilterError>(())
//! ```

#![forbid(unsafe_code)]

pub mod bitshuffle;
mod blosc;
mod blosc2;
mod blosc_encode;
mod bunzip;
mod bzip2;
mod deflate;
mod fletcher32;
pub mod kept;
pub mod lz4;
mod lzf;
mod lzo;
mod shuffle;
mod szip;
mod zstd;

use h5chunk_format::message::{FilterPipeline, filter_pipeline::id};

pub use fletcher32::fletcher32;

/// The Blosc2 filter's identifier (hdf5-blosc2).
const BLOSC2: u16 = 32026;
/// PyTables' LZO filter's identifier.
const LZO: u16 = 305;

/// Why a chunk could not go through the pipeline.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FilterError {
    /// A filter h5chunk does not implement.
    #[error("filter {id} ({name}) is not available")]
    Unknown {
        /// The filter identifier.
        id: u16,
        /// Its name as stored in the pipeline, or the registered name.
        name: String,
    },
    /// A filter h5chunk knows, used in a way it does not implement (a codec, a version).
    #[error("{filter}: {what} is not available")]
    Unsupported {
        /// The filter's name.
        filter: &'static str,
        /// What is not implemented.
        what: &'static str,
    },
    /// The fletcher32 checksum stored with the chunk does not match its bytes.
    #[error("fletcher32 checksum mismatch (stored {stored:#010x}, computed {computed:#010x})")]
    Checksum {
        /// The checksum in the chunk.
        stored: u32,
        /// The checksum of the chunk's bytes.
        computed: u32,
    },
    /// The filter's data is corrupt or does not decode to the expected size.
    #[error("{filter}: {reason}")]
    Corrupt {
        /// The filter's name.
        filter: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// A buffer the chunk's decoding needs could not be allocated (the process's memory or
    /// address-space limit): the chunk is larger than this process may hold, not corrupt.
    /// Every buffer a decoder allocates is first checked against the size the chunk must
    /// decode to, and then allocated fallibly.
    #[error("{filter}: cannot allocate {bytes} bytes")]
    OutOfMemory {
        /// The filter's name.
        filter: &'static str,
        /// The allocation refused.
        bytes: usize,
    },
    /// The filter's parameters (client data) are unusable.
    #[error("{filter}: bad parameters {client_data:?}")]
    BadParameters {
        /// The filter's name.
        filter: &'static str,
        /// The client data.
        client_data: Vec<u32>,
    },
}

/// The name of a registered HDF5 filter (the HDF Group's registry of filter plugins), for
/// the error that says a filter is not available.
pub fn filter_name(filter: u16) -> Option<&'static str> {
    Some(match filter {
        id::DEFLATE => "deflate",
        id::SHUFFLE => "shuffle",
        id::FLETCHER32 => "fletcher32",
        id::SZIP => "szip",
        id::NBIT => "nbit",
        id::SCALEOFFSET => "scaleoffset",
        LZO => "LZO",
        id::BZIP2 => "bzip2",
        id::LZF => "lzf",
        id::BLOSC => "Blosc",
        32002 => "MAFISC",
        32003 => "Snappy",
        id::LZ4 => "LZ4",
        32005 => "APAX",
        32006 => "CBF",
        32007 => "JPEG-XR",
        id::BITSHUFFLE => "bitshuffle",
        32009 => "SPDP",
        32010 => "LPC-Rice",
        32011 => "CCSDS-123",
        32012 => "JPEG-LS",
        32013 => "zfp",
        32014 => "fpzip",
        id::ZSTD => "Zstandard",
        32016 => "B³D",
        32017 => "SZ",
        32018 => "FCIDECOMP",
        32019 => "JPEG",
        32020 => "VBZ",
        32022 => "FAPEC",
        32023 => "BitGroom",
        32024 => "Granular BitRound",
        32025 => "SZ3",
        BLOSC2 => "Blosc2",
        32028 => "FLAC",
        32029 => "SPERR",
        32030 => "TERSE/PROMISE",
        _ => return None,
    })
}

/// Room for `additional` more bytes in `v`, allocated fallibly.
pub(crate) fn reserve(
    v: &mut Vec<u8>,
    filter: &'static str,
    additional: usize,
) -> Result<(), FilterError> {
    v.try_reserve_exact(additional)
        .map_err(|_| FilterError::OutOfMemory {
            filter,
            bytes: additional,
        })
}

/// Put `bytes` at `out[at..]`, growing `out` as far as they need (never shrinking it): the
/// end of what was put. The codecs that write into a buffer kept across chunks (LZ4,
/// bitshuffle) frame their chunks with it.
pub(crate) fn put(out: &mut Vec<u8>, at: usize, bytes: &[u8]) -> usize {
    let end = at.saturating_add(bytes.len());
    if out.len() <= at {
        out.resize(at, 0);
        out.extend_from_slice(bytes);
    } else {
        if out.len() < end {
            out.resize(end, 0);
        }
        if let Some(dst) = out.get_mut(at..end) {
            dst.copy_from_slice(bytes);
        }
    }
    end
}

/// An empty buffer with room for `bytes`, allocated fallibly.
pub(crate) fn buffer(filter: &'static str, bytes: usize) -> Result<Vec<u8>, FilterError> {
    let mut v = Vec::new();
    reserve(&mut v, filter, bytes)?;
    Ok(v)
}

/// `len` zero bytes, allocated fallibly.
pub(crate) fn zeroed(filter: &'static str, len: usize) -> Result<Vec<u8>, FilterError> {
    let mut v = buffer(filter, len)?;
    v.resize(len, 0);
    Ok(v)
}

/// A streaming decoder's error: running out of memory as it grew its output is
/// [`FilterError::OutOfMemory`], anything else is corruption.
pub(crate) fn stream_error(filter: &'static str, e: &std::io::Error, have: usize) -> FilterError {
    if e.kind() == std::io::ErrorKind::OutOfMemory {
        FilterError::OutOfMemory {
            filter,
            bytes: have,
        }
    } else {
        FilterError::Corrupt {
            filter,
            reason: e.to_string(),
        }
    }
}

thread_local! {
    /// This thread's buffer for a shuffled chunk between the stage that decodes it and the
    /// unshuffle into the chunk's place, kept from one chunk to the next: no allocation, no
    /// zeroing and no fresh pages once it has held a chunk as large, up to
    /// [`SHUFFLED_KEPT_MAX`].
    static SHUFFLED: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The most room [`SHUFFLED`] keeps after a chunk: a larger chunk's buffer is freed.
const SHUFFLED_KEPT_MAX: usize = 16 << 20;

/// `f` on `len` bytes of this thread's [`SHUFFLED`] buffer (grown, zeroed, only when shorter;
/// a new one when a call further up holds it), its answer passed through.
fn with_shuffled<R>(
    len: usize,
    f: impl FnOnce(&mut [u8]) -> Option<Result<R, FilterError>>,
) -> Option<Result<R, FilterError>> {
    let mut buf = kept::take(&SHUFFLED).unwrap_or_default();
    if let Some(more) = len.checked_sub(buf.len()).filter(|&n| n > 0) {
        if let Err(e) = reserve(&mut buf, "shuffle", more) {
            return Some(Err(e));
        }
        buf.resize(len, 0);
    }
    let result = f(buf.get_mut(..len).unwrap_or_default());
    kept::keep(&SHUFFLED, buf, SHUFFLED_KEPT_MAX);
    result
}

/// One filter of a pipeline, ready to run.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Stage {
    Deflate {
        level: u32,
    },
    Shuffle {
        element_size: usize,
    },
    Fletcher32,
    Lzf,
    Lz4 {
        block_size: u32,
    },
    Bitshuffle(bitshuffle::Params),
    Zstd {
        level: i32,
    },
    Bzip2 {
        level: u32,
    },
    /// The client data and the element size (for client data that leave out the type size).
    Blosc(Vec<u32>, usize),
    Szip(szip::Params),
    Blosc2(Vec<u32>, usize),
    Lzo,
}

impl Stage {
    fn name(&self) -> &'static str {
        match self {
            Stage::Deflate { .. } => "deflate",
            Stage::Shuffle { .. } => "shuffle",
            Stage::Fletcher32 => "fletcher32",
            Stage::Lzf => "lzf",
            Stage::Lz4 { .. } => "lz4",
            Stage::Bitshuffle(_) => "bitshuffle",
            Stage::Zstd { .. } => "zstd",
            Stage::Bzip2 { .. } => "bzip2",
            Stage::Blosc(..) => "blosc",
            Stage::Szip(_) => "szip",
            Stage::Blosc2(..) => "blosc2",
            Stage::Lzo => "lzo",
        }
    }
}

/// A dataset's filter pipeline (an internal of the read and write paths, public for the
/// crate's tests and benchmarks).
#[doc(hidden)]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pipeline {
    stages: Vec<(Stage, bool)>,
}

impl Pipeline {
    /// The pipeline of a Filter Pipeline message. `element_size` fills in shuffle's parameter
    /// when the message leaves it out (libhdf5 always stores it).
    pub fn new(message: &FilterPipeline, element_size: usize) -> Result<Pipeline, FilterError> {
        let mut stages = Vec::with_capacity(message.filters.len());
        for f in &message.filters {
            let cd = &f.client_data;
            let stage = match f.id {
                id::DEFLATE => Stage::Deflate {
                    level: cd.first().copied().unwrap_or(6),
                },
                id::SHUFFLE => Stage::Shuffle {
                    element_size: cd.first().map_or(element_size, |&s| s as usize),
                },
                id::FLETCHER32 => Stage::Fletcher32,
                id::LZF => Stage::Lzf,
                id::LZ4 => Stage::Lz4 {
                    block_size: cd.first().copied().unwrap_or(0),
                },
                id::BITSHUFFLE => {
                    Stage::Bitshuffle(bitshuffle::Params::parse(cd, element_size).ok_or_else(
                        || FilterError::BadParameters {
                            filter: "bitshuffle",
                            client_data: cd.clone(),
                        },
                    )?)
                }
                id::BLOSC => Stage::Blosc(cd.clone(), element_size),
                BLOSC2 => Stage::Blosc2(cd.clone(), element_size),
                LZO => Stage::Lzo,
                id::SZIP => Stage::Szip(szip::Params::parse(cd).ok_or_else(|| {
                    FilterError::BadParameters {
                        filter: "szip",
                        client_data: cd.clone(),
                    }
                })?),
                id::BZIP2 => Stage::Bzip2 {
                    level: cd.first().copied().unwrap_or(9),
                },
                id::ZSTD => Stage::Zstd {
                    level: cd.first().map_or(3, |&l| l as i32),
                },
                other => {
                    return Err(FilterError::Unknown {
                        id: other,
                        name: filter_name(other).map_or_else(
                            || {
                                let name = f.name();
                                let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
                                String::from_utf8_lossy(name.get(..end).unwrap_or_default())
                                    .into_owned()
                            },
                            str::to_owned,
                        ),
                    });
                }
            };
            if let Stage::Deflate { level } = stage
                && level > 9
            {
                return Err(FilterError::BadParameters {
                    filter: "deflate",
                    client_data: cd.clone(),
                });
            }
            stages.push((stage, f.is_optional()));
        }
        Ok(Pipeline { stages })
    }

    /// Whether the pipeline has no filter.
    pub fn is_empty(&self) -> bool {
        self.stages.is_empty()
    }

    /// Undo the filters on a stored chunk, skipping those whose mask bit is set; the result
    /// must be exactly `chunk_bytes` long.
    pub fn decode(
        &self,
        data: Vec<u8>,
        mask: u32,
        chunk_bytes: usize,
    ) -> Result<Vec<u8>, FilterError> {
        self.decode_from(data, mask, chunk_bytes, 0)
    }

    /// [`decode`](Self::decode) of the stages from `first` on (those before it left undone).
    fn decode_from(
        &self,
        data: Vec<u8>,
        mask: u32,
        chunk_bytes: usize,
        first: usize,
    ) -> Result<Vec<u8>, FilterError> {
        let data = self.decode_stages(data, mask, chunk_bytes, first)?;
        if data.len() != chunk_bytes {
            return Err(FilterError::Corrupt {
                filter: self.stages.first().map_or("pipeline", |(s, _)| s.name()),
                reason: format!(
                    "chunk decodes to {} bytes, expected {chunk_bytes}",
                    data.len()
                ),
            });
        }
        Ok(data)
    }

    /// The most bytes a stage's output may hold for a chunk of `chunk_bytes`: no filter here
    /// makes data grow by more than a few bytes when encoding, but for LZ4's and bitshuffle's
    /// headers and incompressible blocks (at most 1/255 more and 16 bytes per block of at
    /// least 1 KiB when a filter follows them).
    fn limit(&self, chunk_bytes: usize) -> usize {
        chunk_bytes
            .saturating_add(chunk_bytes / 32)
            .saturating_add(1024)
            .saturating_add(self.stages.len().saturating_mul(64))
    }

    /// Room that holds this pipeline's output for any chunk of `chunk_bytes` (its worst case,
    /// with a margin): what a buffer kept for its output may be given at once.
    pub fn encoded_room(&self, chunk_bytes: usize) -> usize {
        self.limit(chunk_bytes)
    }

    /// Undo the stages from `first` on, whatever length that leaves.
    fn decode_stages(
        &self,
        mut data: Vec<u8>,
        mask: u32,
        chunk_bytes: usize,
        first: usize,
    ) -> Result<Vec<u8>, FilterError> {
        // Intermediate results are bounded so a corrupt chunk cannot inflate without limit.
        let limit = self.limit(chunk_bytes);
        for (i, (stage, _)) in self.stages.iter().enumerate().skip(first).rev() {
            if i < 32 && mask & (1 << i) != 0 {
                continue;
            }
            data = match stage {
                Stage::Deflate { .. } => deflate::decompress(&data, limit)?,
                Stage::Shuffle { element_size } => shuffle::unshuffle(&data, *element_size)?,
                Stage::Fletcher32 => fletcher32::verify_and_strip(data)?,
                Stage::Lzf => lzf::decompress(&data, limit)?,
                Stage::Lz4 { .. } => lz4::decompress(&data, limit)?,
                Stage::Bitshuffle(p) => bitshuffle::decompress(&data, p, limit)?,
                Stage::Zstd { .. } => zstd::decompress(&data, limit)?,
                Stage::Bzip2 { .. } => bzip2::decompress(&data, limit)?,
                Stage::Blosc(..) => blosc::decompress(&data, limit)?,
                Stage::Szip(p) => szip::decompress(&data, p, limit)?,
                Stage::Blosc2(..) => blosc2::decompress(&data, limit)?,
                Stage::Lzo => lzo::decompress(&data, limit)?,
            };
        }
        Ok(data)
    }

    /// [`decode`](Self::decode) into `out` (exactly the chunk's length): a first stage of
    /// shuffle, LZ4, bitshuffle, bzip2, Blosc or Blosc2 (decoded last) writes there directly, with no buffer of its
    /// own and no copy after it.
    pub fn decode_into(&self, data: Vec<u8>, mask: u32, out: &mut [u8]) -> Result<(), FilterError> {
        match self.stages.first() {
            Some((stage, _)) if mask & 1 == 0 => match stage {
                Stage::Shuffle { element_size } => {
                    // Every stage but the first (decoded last), then the unshuffle into `out`.
                    let data = self.decode_from(data, mask, out.len(), 1)?;
                    shuffle::unshuffle_into(&data, *element_size, out);
                }
                Stage::Lz4 { .. } => {
                    let data = self.decode_stages(data, mask, out.len(), 1)?;
                    lz4::decompress_into(&data, out)?;
                }
                Stage::Bitshuffle(p) => {
                    let data = self.decode_stages(data, mask, out.len(), 1)?;
                    bitshuffle::decompress_into(&data, p, out)?;
                }
                Stage::Bzip2 { .. } => {
                    let data = self.decode_stages(data, mask, out.len(), 1)?;
                    bzip2::decompress_into(&data, out)?;
                }
                Stage::Blosc(..) => {
                    let data = self.decode_stages(data, mask, out.len(), 1)?;
                    blosc::decompress_into(&data, self.limit(out.len()), out)?;
                }
                Stage::Blosc2(..) => {
                    let data = self.decode_stages(data, mask, out.len(), 1)?;
                    blosc2::decompress_into(&data, self.limit(out.len()), out)?;
                }
                _ => self.decode_copy(data, mask, out)?,
            },
            _ => self.decode_copy(data, mask, out)?,
        }
        Ok(())
    }

    /// Whether [`decode_slice_into`](Self::decode_slice_into) decodes this pipeline's chunks
    /// from borrowed bytes, so that a reader may keep the buffer it reads them into from chunk
    /// to chunk (instead of a zeroed one for each): a single stage of Zstandard, deflate,
    /// szip, LZ4, bitshuffle, bzip2, Blosc, Blosc2 or shuffle, or shuffle then one of those.
    pub fn decodes_slices(&self) -> bool {
        match self.stages.as_slice() {
            [(stage, _)] | [(Stage::Shuffle { .. }, _), (stage, _)] => Self::slices(stage),
            _ => false,
        }
    }

    /// Whether [`decode_stage_slice`](Self::decode_stage_slice) decodes `stage`.
    fn slices(stage: &Stage) -> bool {
        matches!(
            stage,
            Stage::Zstd { .. }
                | Stage::Deflate { .. }
                | Stage::Szip(_)
                | Stage::Lz4 { .. }
                | Stage::Bitshuffle(_)
                | Stage::Bzip2 { .. }
                | Stage::Blosc(..)
                | Stage::Blosc2(..)
                | Stage::Shuffle { .. }
        )
    }

    /// Undo `stage` alone on borrowed `data`, straight into `out` (which it must fill
    /// exactly); `None` for a stage that decodes only into a buffer of its own.
    fn decode_stage_slice(
        &self,
        stage: &Stage,
        data: &[u8],
        out: &mut [u8],
    ) -> Option<Result<(), FilterError>> {
        Some(match stage {
            Stage::Zstd { .. } => zstd::decompress_to_slice(data, out),
            Stage::Deflate { .. } => deflate::decompress_into(data, out),
            Stage::Szip(p) => szip::decompress_into(data, p, out),
            Stage::Lz4 { .. } => lz4::decompress_into(data, out),
            Stage::Bitshuffle(p) => bitshuffle::decompress_into(data, p, out),
            Stage::Bzip2 { .. } => bzip2::decompress_into(data, out),
            Stage::Blosc(..) => blosc::decompress_into(data, self.limit(out.len()), out),
            Stage::Blosc2(..) => blosc2::decompress_into(data, self.limit(out.len()), out),
            Stage::Shuffle { element_size } => {
                if data.len() != out.len() {
                    return None;
                }
                shuffle::unshuffle_into(data, *element_size, out);
                Ok(())
            }
            _ => return None,
        })
    }

    /// [`decode_into`](Self::decode_into) of stored bytes the caller keeps. A pipeline that
    /// [`decodes_slices`](Self::decodes_slices) decodes them where they are, straight into
    /// `out` (Zstandard through a buffer of its own; under a shuffle, through this thread's
    /// kept buffer, unshuffled into `out`); any other takes a copy of them through
    /// [`decode_into`](Self::decode_into).
    pub fn decode_slice_into(
        &self,
        data: &[u8],
        mask: u32,
        out: &mut [u8],
    ) -> Result<(), FilterError> {
        let done = match self.stages.as_slice() {
            [(stage, _)] if mask & 1 == 0 => self.decode_stage_slice(stage, data, out),
            [(Stage::Shuffle { element_size }, _), (stage, _)]
                if mask & 3 == 0 && Self::slices(stage) =>
            {
                with_shuffled(out.len(), |planes| {
                    let decoded = self.decode_stage_slice(stage, data, planes)?;
                    Some(decoded.map(|()| shuffle::unshuffle_into(planes, *element_size, out)))
                })
            }
            _ => None,
        };
        done.unwrap_or_else(|| self.decode_into(data.to_vec(), mask, out))
    }

    /// [`decode`](Self::decode), then copied into `out`, which the result must fill exactly.
    fn decode_copy(&self, data: Vec<u8>, mask: u32, out: &mut [u8]) -> Result<(), FilterError> {
        let v = self.decode(data, mask, out.len())?;
        if v.len() != out.len() {
            return Err(FilterError::Corrupt {
                filter: "pipeline",
                reason: format!(
                    "decodes to {} bytes where the chunk holds {}",
                    v.len(),
                    out.len()
                ),
            });
        }
        out.copy_from_slice(&v);
        Ok(())
    }

    /// [`encode`](Self::encode) into `out` (its old bytes dropped, its room kept): the filter
    /// mask. A pipeline of one LZ4, bitshuffle or Zstandard filter (hdf5plugin's usual ones)
    /// writes its output straight into `out`, so a buffer kept across chunks takes every
    /// chunk with no allocation and no fresh pages; any other pipeline's output replaces it.
    pub fn encode_into(&self, chunk: &[u8], out: &mut Vec<u8>) -> Result<u32, FilterError> {
        let (len, mask) = self.encode_to(chunk, out)?;
        out.truncate(len);
        Ok(mask)
    }

    /// [`encode_into`](Self::encode_into) that leaves `out` longer than the chunk's stored
    /// bytes: they are `out[..len]`, and `(len, mask)` is returned. What follows them is an
    /// earlier chunk's, kept so that the next chunk's worst case is not zeroed again: an LZ4
    /// or bitshuffle/LZ4 pipeline grows `out` only past the longest chunk it has held.
    pub fn encode_to(&self, chunk: &[u8], out: &mut Vec<u8>) -> Result<(usize, u32), FilterError> {
        if let [(stage, _)] = self.stages.as_slice() {
            let done = match stage {
                // As in `encode`: the reference filters fail only on inputs they cannot frame.
                Stage::Lz4 { block_size } => Some(lz4::compress_at(chunk, *block_size, out, 0)),
                Stage::Bitshuffle(p) => Some(bitshuffle::compress_at(chunk, p, out, 0)),
                Stage::Zstd { level } => {
                    out.clear();
                    zstd::compress_into(chunk, *level, out);
                    Some(Ok(out.len()))
                }
                _ => None,
            };
            // A chunk the filter cannot frame (rare) goes through `encode`, which applies the
            // optional / mandatory rule.
            if let Some(Ok(len)) = done {
                return Ok((len, 0));
            }
        }
        let (data, mask) = self.encode(chunk)?;
        *out = data;
        Ok((out.len(), mask))
    }

    /// Apply the filters to a chunk. An optional filter that cannot help (LZF or deflate output
    /// no smaller than its input is still stored by libhdf5; LZF fails instead) is skipped and
    /// its mask bit set, as libhdf5 does; a mandatory one that fails is an error.
    /// The chunk is read where it is: the first filter's output is the first copy.
    pub fn encode(&self, chunk: &[u8]) -> Result<(Vec<u8>, u32), FilterError> {
        let mut mask = 0u32;
        let mut data = std::borrow::Cow::Borrowed(chunk);
        for (i, (stage, optional)) in self.stages.iter().enumerate() {
            let out = match stage {
                Stage::Deflate { level } => Some(deflate::compress(&data, *level)?),
                Stage::Shuffle { element_size } => Some(shuffle::shuffle(&data, *element_size)),
                Stage::Fletcher32 => Some(fletcher32::append(data.clone().into_owned())),
                Stage::Lzf => lzf::compress(&data),
                // The reference filters fail (and libhdf5 then skips an optional filter) only on
                // inputs they cannot frame: chunks of 2 GiB and more, a partial element.
                Stage::Lz4 { block_size } => lz4::compress(&data, *block_size).ok(),
                Stage::Bitshuffle(p) => bitshuffle::compress(&data, p).ok(),
                Stage::Zstd { level } => Some(zstd::compress_chunk(&data, *level)),
                Stage::Bzip2 { level } => Some(bzip2::compress(&data, *level)?),
                // The reference filter fails (and an optional filter is skipped) where its output
                // would outgrow its input.
                Stage::Blosc(cd, element_size) => {
                    blosc_encode::compress_blosc(&data, cd, *element_size)?
                }
                Stage::Blosc2(cd, element_size) => {
                    Some(blosc_encode::compress_blosc2(&data, cd, *element_size)?)
                }
                // PyTables' filter fails where LZO1X does not shrink the chunk.
                Stage::Lzo => lzo::compress(&data),
                // libhdf5's filter fails where the stream would outgrow the chunk.
                Stage::Szip(p) => szip::compress(&data, p)?,
            };
            match out {
                Some(out) => data = std::borrow::Cow::Owned(out),
                None if *optional && i < 32 => mask |= 1 << i,
                None => {
                    return Err(FilterError::Corrupt {
                        filter: stage.name(),
                        reason: "a mandatory filter failed".into(),
                    });
                }
            }
        }
        Ok((data.into_owned(), mask))
    }
}

/// A xorshift64 generator from `seed`: the tests' pseudo-random data.
#[cfg(test)]
pub(crate) fn xorshift(mut state: u64) -> impl FnMut() -> u64 {
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use h5chunk_format::message::{Filter, PipelineVersion};

    fn pipeline(filters: &[(u16, &[u32])]) -> Pipeline {
        let message = FilterPipeline {
            version: PipelineVersion::V2,
            filters: filters
                .iter()
                .map(|&(id, cd)| Filter::new(PipelineVersion::V2, id, 1, cd.to_vec()))
                .collect(),
        };
        Pipeline::new(&message, 4).unwrap()
    }

    #[test]
    fn roundtrip_every_combination() {
        let data: Vec<u8> = (0..4000u32).flat_map(|i| (i / 7).to_le_bytes()).collect();
        for filters in [
            &[(id::DEFLATE, &[4u32][..])][..],
            &[(id::SHUFFLE, &[4][..]), (id::DEFLATE, &[9][..])],
            &[
                (id::SHUFFLE, &[4][..]),
                (id::DEFLATE, &[1][..]),
                (id::FLETCHER32, &[][..]),
            ],
            &[(id::LZF, &[4, 261, 16000][..])],
            &[
                (id::SHUFFLE, &[4][..]),
                (id::LZF, &[][..]),
                (id::FLETCHER32, &[][..]),
            ],
            &[(id::LZ4, &[0][..]), (id::FLETCHER32, &[][..])],
            &[(id::SHUFFLE, &[4][..]), (id::LZ4, &[1000][..])],
            &[(id::BITSHUFFLE, &[0, 4, 4, 0, 2][..])],
            &[
                (id::BITSHUFFLE, &[0, 4, 4, 256, 0][..]),
                (id::DEFLATE, &[4][..]),
                (id::FLETCHER32, &[][..]),
            ],
            &[(id::BITSHUFFLE, &[0, 4, 4, 0, 3, 5][..])],
            &[(id::SHUFFLE, &[4][..]), (id::ZSTD, &[19][..])],
            &[(id::BZIP2, &[1][..]), (id::FLETCHER32, &[][..])],
        ] {
            let p = pipeline(filters);
            let (stored, mask) = p.encode(&data).unwrap();
            assert_eq!(mask, 0);
            assert!(stored.len() < data.len(), "{filters:?} compresses");
            assert_eq!(p.decode(stored, mask, data.len()).unwrap(), data);
        }
    }

    #[test]
    fn encode_into_a_reused_buffer_equals_encode() {
        let data: Vec<u8> = (0..6000u32).flat_map(|i| (i / 11).to_le_bytes()).collect();
        let noise: Vec<u8> = (0..4096u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        // One buffer for every chunk of every pipeline, holding the last one's bytes.
        let mut out = vec![0xEEu8; 100_000];
        let mut long = vec![0x5Au8; 100_000];
        for (i, filters) in [
            // LZ4 blocks and bitshuffle's uncompressed blocks: the buffer is never shortened.
            &[(id::LZ4, &[0u32][..])][..],
            &[(id::LZ4, &[1000][..])],
            &[(id::BITSHUFFLE, &[0, 4, 4, 0, 2][..])],
            &[(id::BITSHUFFLE, &[0, 4, 4, 64, 0][..])],
            &[(id::BITSHUFFLE, &[0, 4, 4, 256, 3, 5][..])],
            &[(id::ZSTD, &[3][..])],
            &[(id::ZSTD, &[19][..])],
            &[(id::SHUFFLE, &[4][..]), (id::DEFLATE, &[4][..])],
            &[(id::LZF, &[][..])],
        ]
        .into_iter()
        .enumerate()
        {
            let p = pipeline(filters);
            for chunk in [&data[..], &noise[..], &data[..100]] {
                let (want, want_mask) = p.encode(chunk).unwrap();
                // Into a buffer longer than any chunk, whose tail stays.
                let (len, mask) = p.encode_to(chunk, &mut long).unwrap();
                assert_eq!((mask, &long[..len]), (want_mask, &want[..]), "{filters:?}");
                if i < 4 {
                    assert_eq!(long.len(), 100_000, "{filters:?}: never shortened");
                }
                let mask = p.encode_into(chunk, &mut out).unwrap();
                assert_eq!((mask, &out), (want_mask, &want), "{filters:?}");
                assert_eq!(
                    p.decode(out.clone(), mask, chunk.len()).unwrap(),
                    chunk,
                    "{filters:?}"
                );
            }
        }
        // A filter that cannot frame the chunk (bitshuffle over a partial element): an optional
        // one is skipped and the chunk stored as it is, a mandatory one is an error.
        let odd = &data[..4001];
        let optional = pipeline(&[(id::BITSHUFFLE, &[0, 4, 4, 0, 2])]);
        assert_eq!(optional.encode_into(odd, &mut out).unwrap(), 1);
        assert_eq!(out, odd);
        assert_eq!(optional.encode(odd).unwrap(), (odd.to_vec(), 1));
        let message = FilterPipeline {
            version: PipelineVersion::V2,
            filters: vec![Filter::new(
                PipelineVersion::V2,
                id::BITSHUFFLE,
                0,
                vec![0, 4, 4, 0, 2],
            )],
        };
        let mandatory = Pipeline::new(&message, 4).unwrap();
        assert!(matches!(
            mandatory.encode_into(odd, &mut out),
            Err(FilterError::Corrupt { .. })
        ));
        assert!(mandatory.encode(odd).is_err());
    }

    #[test]
    fn decode_into_writes_lz4_and_bitshuffle_in_place_and_refuses_what_does_not_fit() {
        let data: Vec<u8> = (0..5000u32).flat_map(|i| (i / 9).to_le_bytes()).collect();
        for filters in [
            &[(id::LZ4, &[0u32][..])][..],
            &[(id::LZ4, &[1000][..]), (id::FLETCHER32, &[][..])],
            &[(id::BITSHUFFLE, &[0, 4, 4, 0, 2][..])],
            &[
                (id::BITSHUFFLE, &[0, 4, 4, 64, 0][..]),
                (id::DEFLATE, &[4][..]),
            ],
            &[(id::BITSHUFFLE, &[0, 4, 4, 0, 3, 1][..])],
        ] {
            let p = pipeline(filters);
            let (stored, mask) = p.encode(&data).unwrap();
            let mut out = vec![0xA5u8; data.len()];
            p.decode_into(stored.clone(), mask, &mut out).unwrap();
            assert_eq!(out, data, "{filters:?}");
            // A chunk whose declared size is not the place's is refused, not truncated.
            let mut short = vec![0u8; data.len() - 4];
            assert!(p.decode_into(stored.clone(), mask, &mut short).is_err());
            // Every truncation is an error, never a panic.
            for n in (0..stored.len()).step_by(7) {
                assert!(p.decode_into(stored[..n].to_vec(), mask, &mut out).is_err());
            }
        }
    }

    #[test]
    fn decode_slice_into_decodes_borrowed_chunks_as_decode_does() {
        // Chunks of other sizes in turn on one thread (the kept buffers grow, then hold more
        // than the next chunk): each decodes to its own bytes, nothing left from the last.
        let chunk =
            |n: u32, k: u32| -> Vec<u8> { (0..n).flat_map(|i| (i / k).to_le_bytes()).collect() };
        let sliced = [
            &[(id::ZSTD, &[3u32][..])][..],
            &[(id::DEFLATE, &[4][..])],
            &[(id::SZIP, &[169, 16, 32, 1000][..])],
            &[(id::SZIP, &[141, 8, 16, 700][..])],
            &[(id::SZIP, &[169, 32, 8, 64][..])],
            &[(id::LZ4, &[0][..])],
            &[(id::BITSHUFFLE, &[0, 4, 4, 0, 2][..])],
            &[(id::BZIP2, &[1][..])],
            &[(id::BLOSC, &[2, 2, 4, 4000, 5, 1, 1][..])],
            &[(id::SHUFFLE, &[4][..])],
            &[(id::SHUFFLE, &[4][..]), (id::DEFLATE, &[4][..])],
            &[(id::SHUFFLE, &[4][..]), (id::ZSTD, &[3][..])],
            &[(id::SHUFFLE, &[4][..]), (id::LZ4, &[0][..])],
            &[
                (id::SHUFFLE, &[2][..]),
                (id::SZIP, &[169, 16, 32, 1000][..]),
            ],
        ];
        let copied = [
            &[(id::ZSTD, &[3u32][..]), (id::FLETCHER32, &[][..])][..],
            &[(id::SHUFFLE, &[4][..]), (id::LZF, &[][..])],
            &[
                (id::SHUFFLE, &[4][..]),
                (id::DEFLATE, &[4][..]),
                (id::FLETCHER32, &[][..]),
            ],
        ];
        for (filters, slices) in
            (sliced.iter().map(|f| (f, true))).chain(copied.iter().map(|f| (f, false)))
        {
            let p = pipeline(filters);
            assert_eq!(p.decodes_slices(), slices, "{filters:?}");
            for (n, k) in [(50_000, 9), (3_000, 2), (80_000, 5), (70_000, 3)] {
                let data = chunk(n, k);
                let (stored, mask) = p.encode(&data).unwrap();
                assert_eq!(mask, 0, "{filters:?}");
                let mut out = vec![0xA5u8; data.len()];
                p.decode_slice_into(&stored, mask, &mut out).unwrap();
                assert_eq!(out, data, "{filters:?} {n}");
                // A place of another size than the chunk's is refused, not filled in part.
                let mut short = vec![0u8; data.len() - 4];
                assert!(p.decode_slice_into(&stored, mask, &mut short).is_err());
                let mut long = vec![0u8; data.len() + 4];
                assert!(p.decode_slice_into(&stored, mask, &mut long).is_err());
                // Truncated chunks are errors; altered ones decode, if at all, to what the
                // owning decoder makes of them: never a panic, never other bytes.
                for cut in (0..stored.len()).step_by(97) {
                    assert!(
                        p.decode_slice_into(&stored[..cut], mask, &mut out).is_err(),
                        "{filters:?} {cut}"
                    );
                }
                for at in (0..stored.len()).step_by(89) {
                    let mut bad = stored.clone();
                    bad[at] ^= 0x5a;
                    if p.decode_slice_into(&bad, mask, &mut out).is_ok() {
                        assert_eq!(
                            p.decode(bad, mask, data.len()).as_ref(),
                            Ok(&out),
                            "{filters:?} {at}"
                        );
                    }
                }
            }
        }
        // A chunk stored unfiltered (every filter's mask bit set) is copied as it is; one whose
        // shuffle alone was skipped decodes as decode decodes it.
        let raw = chunk(1000, 7);
        let mut out = vec![0u8; raw.len()];
        for filters in sliced {
            let p = pipeline(filters);
            p.decode_slice_into(&raw, (1 << filters.len()) - 1, &mut out)
                .unwrap();
            assert_eq!(out, raw, "{filters:?}");
            if let [_, (inner, cd)] = filters {
                let (stored, mask) = pipeline(&[(*inner, cd)]).encode(&raw).unwrap();
                assert_eq!(mask, 0);
                p.decode_slice_into(&stored, 1, &mut out).unwrap();
                assert_eq!(out, raw, "{filters:?}");
            }
        }
    }

    #[test]
    fn masked_filters_are_skipped_and_incompressible_lzf_is_masked() {
        let p = pipeline(&[(id::LZF, &[])]);
        let noise: Vec<u8> = (0..256u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        let (stored, mask) = p.encode(&noise).unwrap();
        assert_eq!((mask, &stored), (1, &noise));
        assert_eq!(p.decode(stored, mask, noise.len()).unwrap(), noise);
    }

    #[test]
    fn rejects_corruption_and_unknown_filters() {
        let p = pipeline(&[(id::DEFLATE, &[4]), (id::FLETCHER32, &[])]);
        let data = vec![7u8; 1000];
        let (mut stored, mask) = p.encode(&data).unwrap();
        stored[3] ^= 0x40;
        assert!(matches!(
            p.decode(stored, mask, 1000),
            Err(FilterError::Checksum { .. })
        ));
        let p = pipeline(&[(id::DEFLATE, &[4])]);
        assert!(p.decode(vec![1, 2, 3, 4], 0, 1000).is_err());
        let (stored, _) = p.encode(&data).unwrap();
        assert!(matches!(
            p.decode(stored, 0, 999),
            Err(FilterError::Corrupt { .. })
        ));
        let message = FilterPipeline {
            version: PipelineVersion::V2,
            filters: vec![Filter::new(PipelineVersion::V2, 32017, 1, vec![])],
        };
        let err = Pipeline::new(&message, 4).unwrap_err();
        assert!(matches!(err, FilterError::Unknown { id: 32017, .. }));
        assert_eq!(err.to_string(), "filter 32017 (SZ) is not available");
        // A filter outside the registry is named by the name the file stores.
        let mut filter = Filter::new(PipelineVersion::V2, 40000, 1, vec![]);
        filter.name = Filter::name_field(PipelineVersion::V2, b"my filter");
        let message = FilterPipeline {
            version: PipelineVersion::V2,
            filters: vec![filter],
        };
        assert_eq!(
            Pipeline::new(&message, 4).unwrap_err().to_string(),
            "filter 40000 (my filter) is not available"
        );
    }

    #[test]
    fn rejects_garbage_in_every_plugin_filter_without_panicking() {
        // Deterministic pseudo-random chunks, some starting with a plausible header.
        let mut next = crate::xorshift(0x9E37_79B9_7F4A_7C15u64);
        for filters in [
            &[(id::LZ4, &[0u32][..])][..],
            &[(id::BITSHUFFLE, &[0, 4, 4, 0, 2][..])],
            &[(id::BITSHUFFLE, &[0, 4, 2, 64, 3, 1][..])],
            &[(id::BITSHUFFLE, &[0, 4, 8, 0, 0][..])],
            &[(id::ZSTD, &[3][..])],
            &[(id::BZIP2, &[9][..])],
            &[(id::BLOSC, &[2, 2, 4, 4000, 5, 1, 1][..])],
            &[(BLOSC2, &[1, 0, 4, 4000, 5, 1, 1][..])],
            &[(BLOSC2, &[1, 0, 4, 4000, 5, 2, 5, 2, 40, 25][..])],
            &[(LZO, &[1, 23, 0][..])],
            &[(id::SZIP, &[141, 8, 32, 100][..])],
            &[(id::SZIP, &[45, 16, 16, 1000][..])],
        ] {
            let p = pipeline(filters);
            let good = p
                .encode(&vec![3u8; 4000])
                .map(|(c, _)| c)
                .unwrap_or_default();
            for round in 0..300 {
                let len = (next() % 600) as usize;
                let mut junk: Vec<u8> = (0..len).map(|_| next() as u8).collect();
                if round % 3 == 0 {
                    // The start of a real chunk (its header), then junk.
                    let keep = good.len().min(16);
                    junk.splice(0..0, good[..keep].iter().copied());
                }
                if let Ok(d) = p.decode(junk, 0, 4000) {
                    assert_eq!(d.len(), 4000);
                }
            }
        }
    }
}
