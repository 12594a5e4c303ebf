//! The one-shot Zstandard frame of the filter's compressor: rust-zstd's match finders and
//! entropy coders, driven block by block here so that each block is coded straight into the
//! chunk's output.
//!
//! `rust_zstd::Compressor` codes a block into a buffer of its own and then copies it into the
//! output: about 1% of a level-3 compression of float data (perf, 128 MiB in 2 MiB frames).
//! This driver runs the same stages in the same order (`ZSTD_compress2` without a dictionary,
//! checksum, long distance matching or worker threads): frame header, then for each block the
//! pre-splitter's size, the sequence store, literals and sequences coded with the tables the
//! previous compressed block left, and the raw / RLE / compressed choice. Its frames are the
//! bytes `rust_zstd::compress` writes (which are libzstd's); `tests::frames_equal_rust_zstd`
//! compares them over levels, sizes and data kinds. Strategies that split blocks after their
//! sequences or that may turn long distance matching on (btopt and up) stay with
//! `rust_zstd::Compressor`: see [`Frames::handles`].

use rust_zstd::compress::block::{self, BlockLdm, is_rle, write_raw_block, write_rle_block};
use rust_zstd::compress::entropy::EntropyTables;
use rust_zstd::compress::matchstate::MatchState;
use rust_zstd::compress::presplit::{self, PreSplitter, SPLIT_BLOCK_SIZE};
use rust_zstd::compress::{CParams, SeqStore, Strategy};
use rust_zstd::constants::{ZSTD_BLOCKSIZE_MAX, ZSTD_MAGIC};
use rust_zstd::{fse, huf};

/// `repStartValue`: the repeat offsets a frame without a dictionary starts from.
const REP_START: [u32; 3] = [1, 4, 8];
/// A block header's bytes.
const BLOCK_HEADER: usize = 3;
/// `MIN_CBLOCK_SIZE`: a block no longer than this and a header and a byte is written raw,
/// without a match search.
const MIN_CBLOCK: usize = 2;
/// `rleMaxLength`: a block all of one byte is written as RLE when its compressed form is
/// shorter than this (and it is not the frame's first block).
const RLE_MAX: usize = 25;
/// The block header's type of a compressed block (raw and RLE blocks are rust-zstd's
/// `write_raw_block` and `write_rle_block`).
const BLOCK_COMPRESSED: u32 = 2;
/// `ZSTD_WINDOWLOG_ABSOLUTEMIN`: the window descriptor's exponent is counted from it.
const WINDOW_LOG_MIN: u32 = 10;

/// One thread's frame coder, kept across chunks: its match state (whose indices continue from
/// frame to frame, so its tables are not cleared for each), sequence store and code buffer.
pub(super) struct Frames {
    ms: MatchState,
    store: SeqStore,
    codes: Vec<u8>,
    presplit: PreSplitter,
    entropy: EntropyTables,
}

impl std::fmt::Debug for Frames {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Frames")
            .field("cparams", &self.ms.cparams)
            .finish_non_exhaustive()
    }
}

impl Frames {
    /// Whether this driver writes `cparams`' frames as rust-zstd does: strategies below btopt
    /// (rust-zstd's default options split blocks after their sequences, and may enable long
    /// distance matching, only from btopt on).
    pub(super) fn handles(cparams: &CParams) -> bool {
        cparams.strategy < Strategy::BtOpt
    }

    pub(super) fn new(cparams: CParams) -> Self {
        Frames {
            ms: MatchState::new(cparams, 0),
            store: SeqStore::with_capacity(ZSTD_BLOCKSIZE_MAX),
            codes: Vec::new(),
            presplit: PreSplitter::default(),
            entropy: EntropyTables::default(),
        }
    }

    /// Append one frame of `src`, compressed with `cparams` (those of the level for `src`'s
    /// size, and [`Frames::handles`] them), to `out`.
    pub(super) fn compress(&mut self, src: &[u8], cparams: CParams, out: &mut Vec<u8>) {
        debug_assert!(Self::handles(&cparams));
        self.ms.reset(cparams, 0);
        self.entropy.clear();
        // Fresh blocks never grow the store past a block's room (rust-zstd's fast path).
        self.store.reserve(ZSTD_BLOCKSIZE_MAX);
        out.reserve(src.len().saturating_add(64));
        write_frame_header(out, src.len() as u64, cparams.window_log);
        if src.is_empty() {
            write_raw_block(out, &[], true);
            return;
        }
        let block_max = ZSTD_BLOCKSIZE_MAX.min(1usize << cparams.window_log.min(30));
        let split = presplit::split_level(0, cparams.strategy);
        let mut rep = REP_START;
        // Source bytes minus written bytes over the blocks so far (`savings`): the
        // pre-splitter starts once the frame has saved 3 bytes.
        let mut gained: i64 = 0;
        let mut start = 0usize;
        while start < src.len() {
            let unsplit = (src.len().saturating_sub(start)).min(block_max);
            let size = match split {
                Some(level) if unsplit == SPLIT_BLOCK_SIZE && gained >= 3 => {
                    let block = src
                        .get(start..start.saturating_add(unsplit))
                        .unwrap_or_default();
                    self.presplit.split_block(block, level)
                }
                _ => unsplit,
            };
            let end = start.saturating_add(size).min(src.len());
            let written = out.len();
            self.block(src, start..end, &mut rep, &cparams, out);
            let wrote = i64::try_from(out.len().saturating_sub(written)).unwrap_or(i64::MAX);
            gained = gained
                .saturating_add(i64::try_from(size).unwrap_or(i64::MAX))
                .saturating_sub(wrote);
            start = end;
        }
    }

    /// One block, `src[range]`, appended to `out`: `ZSTD_compressBlock_internal`.
    fn block(
        &mut self,
        src: &[u8],
        range: std::ops::Range<usize>,
        rep: &mut [u32; 3],
        cparams: &CParams,
        out: &mut Vec<u8>,
    ) {
        let first = range.start == 0;
        let last = range.end == src.len();
        let data = src.get(range.clone()).unwrap_or_default();
        let len = data.len();
        let entered = self.ms.enter_block(range);
        let built = if len > MIN_CBLOCK + BLOCK_HEADER + 1 {
            block::build_seq_store(
                &mut self.ms,
                src,
                entered,
                *rep,
                &mut self.store,
                &mut BlockLdm::Off,
                None,
            )
        } else {
            None
        };
        let Some(next_rep) = built else {
            // Too small to attempt: raw, without the RLE check.
            write_raw_block(out, data, last);
            self.entropy.fse.of.demote_valid();
            return;
        };
        // Literals and sequences coded after a header that is filled in once the block's
        // type is known.
        let at = out.len();
        out.extend_from_slice(&[0; BLOCK_HEADER]);
        let EntropyTables { huf, fse } = &mut self.entropy;
        let huf_next = huf::compress_literals_with(
            out,
            &self.store.lits,
            self.store.seqs.len(),
            huf.split(),
            cparams,
        );
        let fse_next = fse::encode_sequences_section_with(
            out,
            &self.store.seqs,
            &mut self.codes,
            fse.split(),
            cparams,
        );
        let body = out.len().saturating_sub(at).saturating_sub(BLOCK_HEADER);
        let max = len.saturating_sub(CParams::min_gain(len, cparams.strategy));
        let compressed = fse_next.filter(|_| body < max);
        let c_size = if compressed.is_some() { body } else { 0 };
        if !first && c_size < RLE_MAX && is_rle(data) {
            out.truncate(at);
            write_rle_block(out, data.first().copied().unwrap_or(0), len, last);
        } else if let Some(fse_next) = compressed {
            let header = block_header(BLOCK_COMPRESSED, body, last);
            if let Some(h) = out.get_mut(at..at.saturating_add(BLOCK_HEADER)) {
                h.copy_from_slice(&header);
            }
            *rep = next_rep;
            huf.commit(huf_next);
            fse.commit(fse_next);
        } else {
            out.truncate(at);
            write_raw_block(out, data, last);
        }
        self.entropy.fse.of.demote_valid();
    }
}

/// A block header: last-block flag, type and size in three little-endian bytes.
fn block_header(kind: u32, size: usize, last: bool) -> [u8; BLOCK_HEADER] {
    let size = u32::try_from(size).unwrap_or(u32::MAX);
    let h = u32::from(last) | (kind << 1) | (size << 3);
    let [a, b, c, _] = h.to_le_bytes();
    [a, b, c]
}

/// The frame header libzstd's one-shot compression writes (RFC 8878 section 3.1.1.1): the
/// content size always, single segment when the window covers it, no checksum or dictionary.
fn write_frame_header(out: &mut Vec<u8>, size: u64, window_log: u32) {
    out.extend_from_slice(&ZSTD_MAGIC.to_le_bytes());
    let single = 1u64.checked_shl(window_log).is_some_and(|w| w >= size);
    let fcs: u8 = u8::from(size >= 256)
        .saturating_add(u8::from(size >= 65536 + 256))
        .saturating_add(u8::from(size >= 0xFFFF_FFFF));
    out.push((u8::from(single) << 5) | (fcs << 6));
    if !single {
        let exp = u8::try_from(window_log.saturating_sub(WINDOW_LOG_MIN)).unwrap_or(u8::MAX);
        out.push(exp << 3);
    }
    match fcs {
        0 => out.push(size.to_le_bytes()[0]),
        1 => out.extend_from_slice(
            &u16::try_from(size.saturating_sub(256))
                .unwrap_or(u16::MAX)
                .to_le_bytes(),
        ),
        2 => out.extend_from_slice(&u32::try_from(size).unwrap_or(u32::MAX).to_le_bytes()),
        _ => out.extend_from_slice(&size.to_le_bytes()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Inputs of every shape the frame driver meets: empty, tiny, a block and a byte, several
    /// blocks with a short last one, runs of one byte (RLE blocks), noise (raw blocks), and
    /// float and detector-like data of the filters bench's kinds.
    fn inputs() -> Vec<(String, Vec<u8>)> {
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut rand = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut v = vec![
            ("empty".to_owned(), Vec::new()),
            ("one".to_owned(), vec![7]),
            ("six".to_owned(), vec![1, 2, 3, 4, 5, 6]),
            ("zeros".to_owned(), vec![0; 300_000]),
        ];
        let noise: Vec<u8> = (0..200_001).map(|_| rand() as u8).collect();
        v.push(("noise".to_owned(), noise));
        // A smooth float field with small noise, as the climate rows.
        let field: Vec<u8> = (0..(1 << 19))
            .flat_map(|i| {
                let x = (i % 1024) as f32 / 163.0;
                let y = (i / 1024) as f32 / 81.0;
                let jitter = (rand() % 1000) as f32 / 20_000.0;
                (288.0 + 30.0 * y.cos() + 5.0 * (3.0 * x).sin() + jitter).to_le_bytes()
            })
            .collect();
        v.push(("field-2MiB".to_owned(), field.clone()));
        v.push(("field-odd".to_owned(), field[..1_234_567].to_vec()));
        // Photon counts: mostly 0-2 as u16, with bright runs and a band of zeros.
        let counts: Vec<u8> = (0..(1 << 20))
            .flat_map(|i| {
                let r = rand();
                let c: u16 = if (i / 1024) % 97 == 3 {
                    0
                } else if r % 251 == 0 {
                    (r >> 8) as u16 % 5000
                } else {
                    (r % 3) as u16
                };
                c.to_le_bytes()
            })
            .collect();
        v.push(("counts".to_owned(), counts));
        // Repeating text with edits: long matches and repeat offsets.
        let text: Vec<u8> = (0..400_000u32)
            .map(|i| {
                if rand() % 97 == 0 {
                    b'#'
                } else {
                    b"the quick brown fox jumps over the lazy dog "[(i % 44) as usize]
                }
            })
            .collect();
        v.push(("text".to_owned(), text));
        v
    }

    #[test]
    fn frames_equal_rust_zstd() {
        let inputs = inputs();
        for level in -7..=15 {
            // One coder per level across all inputs: indices continue from frame to frame.
            let mut coder: Option<Frames> = None;
            for (name, data) in &inputs {
                let cparams = CParams::for_level(level, data.len());
                let want = rust_zstd::compress(data, level);
                if !Frames::handles(&cparams) {
                    continue;
                }
                let coder = coder.get_or_insert_with(|| Frames::new(cparams));
                let mut got = vec![0xAA];
                coder.compress(data, cparams, &mut got);
                assert_eq!(
                    got[0], 0xAA,
                    "{name} level {level}: bytes before the frame kept"
                );
                assert!(got[1..] == want[..], "{name} level {level}: frame differs");
            }
        }
    }
}
