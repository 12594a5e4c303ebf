//! File Space Info message (type 0x0017): how the file manages its space (libhdf5's
//! `H5Pset_file_space_strategy` and `H5Pset_file_space_page_size`), kept in the superblock
//! extension. A file of the paged strategy ("paged aggregation") keeps metadata and raw data
//! in separate pages of `page size` bytes.
//!
//! Version 1 (libhdf5 1.10.1 and later; the only version libhdf5 writes):
//!
//! | off       | size      | field                                                        |
//! |-----------|-----------|--------------------------------------------------------------|
//! | 0         | 1         | version = 1                                                  |
//! | 1         | 1         | strategy: 0 FSM + aggregators, 1 paged, 2 aggregators, 3 none |
//! | 2         | 1         | persisting free space: 0 or 1                                |
//! | 3         | L         | free-space section threshold                                 |
//! | 3+L       | L         | file space page size                                         |
//! | 3+2L      | 2         | page end metadata threshold                                  |
//! | 5+2L      | O         | EOA before the free-space managers' allocation (UNDEF if not persisting) |
//! | 5+2L+O    | 12 × O    | free-space manager addresses, only when persisting: small then large pages of the types superblock, B-tree, raw data, global heap, local heap, object header |
//!
//! Version 0 (libhdf5 1.10.0 only, deprecated): version, the old strategy code (1 all
//! persisting, 2 all, 3 aggregators and VFD, 4 VFD), the threshold (L), then six free-space
//! manager addresses (one per memory type) only for strategy 1. libhdf5 reads it as the
//! version 1 values those codes mean; this decoder does the same and keeps the original code,
//! so the message re-encodes to its bytes.
//!
//! (Layout from the HDF5 specification's "File Space Info" message and libhdf5's
//! `H5Ofsinfo.c`, checked against files h5py 3.16 / libhdf5 2.0 wrote with `fs_strategy`,
//! `fs_persist` and `fs_page_size`.)

use crate::addr::Addr;
use crate::cursor::{Decoder, Encoder};
use crate::error::Result;

/// The number of free-space manager addresses a persisting version 1 message stores.
pub const MANAGERS_V1: usize = 12;
/// The number of free-space manager addresses a version 0 message of strategy 1 stores.
pub const MANAGERS_V0: usize = 6;
/// The smallest page size libhdf5 accepts (`H5F_FILE_SPACE_PAGE_SIZE_MIN`).
pub const MIN_PAGE_SIZE: u64 = 512;
/// libhdf5's default page size (`H5F_FILE_SPACE_PAGE_SIZE_DEF`), stored even when the file
/// is not paged.
pub const DEFAULT_PAGE_SIZE: u64 = 4096;

/// The file space handling strategy ("File Space Strategy").
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum FileSpaceStrategy {
    /// 0: free-space managers, aggregators and the file driver (libhdf5's default).
    FsmAggr,
    /// 1: paged aggregation: metadata and raw data in separate pages.
    Page,
    /// 2: aggregators and the file driver, no free-space managers.
    Aggr,
    /// 3: the file driver only.
    None,
}

impl FileSpaceStrategy {
    /// The strategy's code in a version 1 message.
    pub fn code(self) -> u8 {
        match self {
            FileSpaceStrategy::FsmAggr => 0,
            FileSpaceStrategy::Page => 1,
            FileSpaceStrategy::Aggr => 2,
            FileSpaceStrategy::None => 3,
        }
    }

    fn from_code(code: u8) -> Option<Self> {
        Some(match code {
            0 => FileSpaceStrategy::FsmAggr,
            1 => FileSpaceStrategy::Page,
            2 => FileSpaceStrategy::Aggr,
            3 => FileSpaceStrategy::None,
            _ => return None,
        })
    }
}

/// A decoded File Space Info message.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct FileSpaceInfo {
    /// The strategy ("File Space Strategy").
    pub strategy: FileSpaceStrategy,
    /// Whether free space is tracked across closes ("Persisting Free Space").
    pub persist: bool,
    /// The smallest free-space section tracked ("Free-space Section Threshold").
    pub threshold: u64,
    /// The page size of the paged strategy ("File Space Page Size").
    pub page_size: u64,
    /// "Page End Metadata Threshold".
    pub page_end_meta_threshold: u16,
    /// "EOA before the free-space managers' allocation" (persisting files only).
    pub eoa_pre_fsm_alloc: Option<Addr>,
    /// The free-space managers' addresses: 12 for a persisting version 1 message, 6 for a
    /// version 0 message of the old strategy 1, none otherwise.
    pub managers: Vec<Option<Addr>>,
    /// The old strategy code of a version 0 message (`None`: version 1).
    pub legacy_code: Option<u8>,
}

impl FileSpaceInfo {
    /// The message libhdf5 writes for a file of strategy `strategy` and page size `page_size`
    /// that does not persist free space, with the default threshold (1) and page end
    /// metadata threshold (0).
    pub fn new(strategy: FileSpaceStrategy, page_size: u64) -> Self {
        FileSpaceInfo {
            strategy,
            persist: false,
            threshold: 1,
            page_size,
            page_end_meta_threshold: 0,
            eoa_pre_fsm_alloc: None,
            managers: Vec::new(),
            legacy_code: None,
        }
    }

    /// Whether the file uses paged aggregation.
    pub fn is_paged(&self) -> bool {
        self.strategy == FileSpaceStrategy::Page
    }

    /// Decode a File Space Info message body.
    pub fn decode(d: &mut Decoder<'_>) -> Result<Self> {
        let at = d.addr();
        match d.u8()? {
            0 => Self::decode_v0(d),
            1 => {
                let at = d.addr();
                let code = d.u8()?;
                let strategy = FileSpaceStrategy::from_code(code)
                    .ok_or_else(|| d.bad_value(at, "file space strategy", u64::from(code)))?;
                let at = d.addr();
                let persist = match d.u8()? {
                    0 => false,
                    1 => true,
                    v => return Err(d.bad_value(at, "persisting free space", u64::from(v))),
                };
                let threshold = d.length()?;
                let page_size = d.length()?;
                let page_end_meta_threshold = d.u16()?;
                let eoa_pre_fsm_alloc = d.offset()?;
                let mut managers = Vec::new();
                if persist {
                    for _ in 0..MANAGERS_V1 {
                        managers.push(d.offset()?);
                    }
                }
                Ok(FileSpaceInfo {
                    strategy,
                    persist,
                    threshold,
                    page_size,
                    page_end_meta_threshold,
                    eoa_pre_fsm_alloc,
                    managers,
                    legacy_code: None,
                })
            }
            v => Err(d.bad_version(at, v)),
        }
    }

    fn decode_v0(d: &mut Decoder<'_>) -> Result<Self> {
        let at = d.addr();
        let code = d.u8()?;
        let threshold = d.length()?;
        // libhdf5's defaults for what version 0 does not store.
        let mut m = FileSpaceInfo::new(FileSpaceStrategy::FsmAggr, DEFAULT_PAGE_SIZE);
        m.legacy_code = Some(code);
        // libhdf5 uses the threshold for codes 1 and 2 only; it is kept for every code so the
        // message re-encodes to the bytes read.
        m.threshold = threshold;
        match code {
            1 => {
                m.persist = true;
                for _ in 0..MANAGERS_V0 {
                    m.managers.push(d.offset()?);
                }
            }
            2 => {}
            3 => m.strategy = FileSpaceStrategy::Aggr,
            4 => m.strategy = FileSpaceStrategy::None,
            _ => return Err(d.bad_value(at, "file space strategy", u64::from(code))),
        }
        Ok(m)
    }

    /// Encode the message body.
    pub fn encode(&self, e: &mut Encoder<'_>) -> Result<()> {
        if let Some(code) = self.legacy_code {
            e.u8(0);
            e.u8(code);
            e.length(self.threshold, "free-space section threshold")?;
            if code == 1 {
                for &a in &self.managers {
                    e.offset(a, "free-space manager address")?;
                }
            }
            return Ok(());
        }
        e.u8(1);
        e.u8(self.strategy.code());
        e.u8(u8::from(self.persist));
        e.length(self.threshold, "free-space section threshold")?;
        e.length(self.page_size, "file space page size")?;
        e.u16(self.page_end_meta_threshold);
        e.offset(
            self.eoa_pre_fsm_alloc,
            "EOA before free-space manager allocation",
        )?;
        if self.persist {
            for &a in &self.managers {
                e.offset(a, "free-space manager address")?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
#[allow(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::arithmetic_side_effects
)]
mod tests {
    use super::*;
    use crate::Error;
    use crate::sizes::Sizes;

    /// What h5py 3.16 (libhdf5 2.0) wrote for `fs_strategy="page", fs_page_size=4096,
    /// fs_persist=False`.
    #[rustfmt::skip]
    const PAGED: [u8; 29] = [
        1,                          // version 1
        1,                          // strategy: paged
        0,                          // not persisting
        1, 0, 0, 0, 0, 0, 0, 0,     // threshold 1
        0, 0x10, 0, 0, 0, 0, 0, 0,  // page size 4096
        0, 0,                       // page end metadata threshold 0
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // EOA before FSM allocation: UNDEF
    ];

    /// The same with `fs_persist=True`: the EOA and twelve manager addresses.
    #[rustfmt::skip]
    const PERSISTING: [u8; 125] = {
        let mut b = [0xffu8; 125];
        let head: [u8; 29] = [
            1, 1, 1,
            1, 0, 0, 0, 0, 0, 0, 0,
            0, 0x10, 0, 0, 0, 0, 0, 0,
            0, 0,
            0, 0x50, 0, 0, 0, 0, 0, 0, // EOA 0x5000
        ];
        let mut i = 0;
        while i < 29 {
            b[i] = head[i];
            i += 1;
        }
        // manager 1 at 0x555, 3 at 0x4e0
        let m1: [u8; 8] = [0x55, 0x05, 0, 0, 0, 0, 0, 0];
        let m3: [u8; 8] = [0xe0, 0x04, 0, 0, 0, 0, 0, 0];
        let mut j = 0;
        while j < 8 {
            b[29 + j] = m1[j];
            b[29 + 16 + j] = m3[j];
            j += 1;
        }
        b
    };

    fn decode(body: &[u8]) -> Result<FileSpaceInfo> {
        FileSpaceInfo::decode(&mut Decoder::new(
            body,
            Addr(0x40),
            Sizes::DEFAULT,
            "File Space Info message",
        ))
    }

    fn encode(m: &FileSpaceInfo) -> Vec<u8> {
        let mut out = Vec::new();
        m.encode(&mut Encoder::new(
            &mut out,
            Sizes::DEFAULT,
            "File Space Info message",
        ))
        .unwrap();
        out
    }

    #[test]
    fn roundtrip_paged() {
        let m = decode(&PAGED).unwrap();
        assert_eq!(m, FileSpaceInfo::new(FileSpaceStrategy::Page, 4096));
        assert!(m.is_paged());
        assert_eq!(encode(&m), PAGED);
    }

    #[test]
    fn roundtrip_persisting() {
        let m = decode(&PERSISTING).unwrap();
        assert!(m.persist);
        assert_eq!(m.eoa_pre_fsm_alloc, Some(Addr(0x5000)));
        assert_eq!(m.managers.len(), MANAGERS_V1);
        assert_eq!(m.managers[0], Some(Addr(0x555)));
        assert_eq!(m.managers[1], None);
        assert_eq!(m.managers[2], Some(Addr(0x4e0)));
        assert_eq!(encode(&m), PERSISTING);
    }

    #[test]
    fn roundtrip_version_0() {
        #[rustfmt::skip]
        let body: Vec<u8> = [
            &[0u8, 1][..],                          // version 0, all persisting
            &[10, 0, 0, 0, 0, 0, 0, 0],             // threshold 10
            &[0x20, 0, 0, 0, 0, 0, 0, 0],           // manager of type 1 at 0x20
            &[0xff; 40],                            // five undefined
        ].concat();
        let m = decode(&body).unwrap();
        assert_eq!(m.strategy, FileSpaceStrategy::FsmAggr);
        assert!(m.persist);
        assert_eq!(m.threshold, 10);
        assert_eq!(m.managers.len(), MANAGERS_V0);
        assert_eq!(encode(&m), body);
        let aggr = [0u8, 3, 1, 0, 0, 0, 0, 0, 0, 0];
        let m = decode(&aggr).unwrap();
        assert_eq!(m.strategy, FileSpaceStrategy::Aggr);
        assert!(!m.persist);
        assert_eq!(encode(&m), aggr);
    }

    #[test]
    fn rejects_truncation() {
        for n in 0..PAGED.len() {
            assert!(decode(&PAGED[..n]).is_err(), "prefix {n}");
        }
        for n in 0..PERSISTING.len() {
            assert!(decode(&PERSISTING[..n]).is_err(), "prefix {n}");
        }
    }

    #[test]
    fn rejects_bad_values() {
        let mut b = PAGED;
        b[0] = 2;
        assert!(matches!(decode(&b), Err(Error::BadVersion { .. })));
        let mut b = PAGED;
        b[1] = 4;
        assert!(matches!(
            decode(&b),
            Err(Error::BadValue { at: Addr(0x41), .. })
        ));
        let mut b = PAGED;
        b[2] = 2;
        assert!(matches!(
            decode(&b),
            Err(Error::BadValue { at: Addr(0x42), .. })
        ));
        assert!(matches!(
            decode(&[0, 5, 0, 0, 0, 0, 0, 0, 0, 0]),
            Err(Error::BadValue { .. })
        ));
    }
}
