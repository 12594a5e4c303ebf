//! Library version bounds and the format versions libhdf5 derives from them.
//!
//! libhdf5 writes the oldest structure version that the *low* bound allows and refuses to create
//! anything the *high* bound forbids. h5py's default bounds are (earliest, latest), which is why
//! plain h5py files have a version 0 superblock, version 1 object headers and version 1 B-tree
//! chunk indexes. h5chunk follows HDF5 2.0 (the library current h5py wheels bundle): `Latest`
//! behaves as `V200`, so a filtered dataset under a `V200`/`Latest` low bound gets layout
//! version 5, which libhdf5 1.x cannot read.

use crate::error::{Error, Result};

/// A libhdf5 release whose file format a bound names (`H5F_libver_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Libver {
    /// The oldest format for every structure (libhdf5 1.0 onwards).
    Earliest,
    /// libhdf5 1.8.
    V18,
    /// libhdf5 1.10: superblock 3, new chunk indexes, SWMR.
    V110,
    /// libhdf5 1.12.
    V112,
    /// libhdf5 1.14.
    V114,
    /// libhdf5 2.0: layout version 5 for filtered datasets.
    V200,
    /// The newest format the library knows (HDF5 2.0 here).
    Latest,
}

impl Libver {
    /// `Latest` resolved to the release it stands for.
    fn resolved(self) -> Libver {
        match self {
            Libver::Latest => Libver::V200,
            v => v,
        }
    }

    /// The name h5py uses (`'earliest'`, `'v108'`, ..., `'latest'`).
    pub fn h5py_name(self) -> &'static str {
        match self {
            Libver::Earliest => "earliest",
            Libver::V18 => "v108",
            Libver::V110 => "v110",
            Libver::V112 => "v112",
            Libver::V114 => "v114",
            Libver::V200 => "v200",
            Libver::Latest => "latest",
        }
    }
}

/// The low and high library version bounds of a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LibverBounds {
    low: Libver,
    high: Libver,
}

impl Default for LibverBounds {
    /// h5py's default: (earliest, latest).
    fn default() -> Self {
        LibverBounds {
            low: Libver::Earliest,
            high: Libver::Latest,
        }
    }
}

impl LibverBounds {
    /// Bounds `low..=high`. libhdf5 refuses a low bound above the high one and a high bound of
    /// `Earliest`.
    pub fn new(low: Libver, high: Libver) -> Result<LibverBounds> {
        if high == Libver::Earliest || low.resolved() > high.resolved() {
            return Err(Error::arg(
                "bounds",
                format!("library version bounds ({low:?}, {high:?}) are not valid"),
            ));
        }
        Ok(LibverBounds { low, high })
    }

    /// The low bound.
    pub fn low(self) -> Libver {
        self.low
    }

    /// The high bound.
    pub fn high(self) -> Libver {
        self.high
    }

    /// The superblock version libhdf5 writes: 0, raised to 1 for a non-default indexed-storage
    /// K, to 3 for a SWMR-write create, and to the low bound's minimum (V18: 2, V110 on: 3).
    pub fn superblock_version(self, swmr_write: bool, nondefault_istore_k: bool) -> u8 {
        let v = if swmr_write {
            3
        } else if nondefault_istore_k {
            1
        } else {
            0
        };
        let floor = match self.low.resolved() {
            Libver::Earliest => 0,
            Libver::V18 => 2,
            _ => 3,
        };
        v.max(floor)
    }

    /// Whether new objects get version 2 object headers (low bound V18 or later).
    pub fn new_style(self) -> bool {
        self.low.resolved() >= Libver::V18
    }

    /// The layout message version of a new chunked dataset: 3 by default, 4 when the dataset
    /// asks for options only version 4 has (`dont_filter_partial_chunks`), raised to the low
    /// bound's minimum (V110 on: 4; V200 on: 5 for filtered datasets), and refused above the
    /// high bound's maximum.
    pub fn layout_version(self, filtered: bool, needs_v4: bool) -> Result<u8> {
        let floor = match self.low.resolved() {
            Libver::Earliest | Libver::V18 => 3,
            Libver::V200 if filtered => 5,
            _ => 4,
        };
        let version = floor.max(if needs_v4 { 4 } else { 3 });
        let ceiling = match self.high.resolved() {
            Libver::Earliest | Libver::V18 => 3,
            Libver::V110 | Libver::V112 | Libver::V114 => 4,
            _ => 5,
        };
        if version > ceiling {
            return Err(Error::arg(
                "bounds",
                format!(
                    "layout version {version} is above the high library version bound {:?}",
                    self.high
                ),
            ));
        }
        Ok(version)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Libver::*;

    #[test]
    fn superblock_versions_follow_libhdf5() {
        let b = |l, h| LibverBounds::new(l, h).unwrap();
        assert_eq!(LibverBounds::default().superblock_version(false, false), 0);
        assert_eq!(LibverBounds::default().superblock_version(false, true), 1);
        assert_eq!(LibverBounds::default().superblock_version(true, false), 3);
        assert_eq!(b(V18, Latest).superblock_version(false, false), 2);
        assert_eq!(b(V110, Latest).superblock_version(false, false), 3);
        assert_eq!(b(Latest, Latest).superblock_version(false, false), 3);
    }

    #[test]
    fn layout_versions_follow_libhdf5() {
        let b = |l, h| LibverBounds::new(l, h).unwrap();
        assert_eq!(
            LibverBounds::default().layout_version(true, false).unwrap(),
            3
        );
        assert_eq!(
            LibverBounds::default().layout_version(false, true).unwrap(),
            4
        );
        assert_eq!(b(V18, V18).layout_version(false, false).unwrap(), 3);
        assert!(b(V18, V18).layout_version(false, true).is_err());
        assert_eq!(b(V110, Latest).layout_version(true, false).unwrap(), 4);
        assert_eq!(b(V114, V200).layout_version(true, false).unwrap(), 4);
        assert_eq!(b(Latest, Latest).layout_version(false, false).unwrap(), 4);
        assert_eq!(b(Latest, Latest).layout_version(true, false).unwrap(), 5);
        assert_eq!(b(V200, V200).layout_version(true, false).unwrap(), 5);
    }

    #[test]
    fn rejects_inverted_bounds() {
        assert!(LibverBounds::new(Latest, V110).is_err());
        assert!(LibverBounds::new(Earliest, Earliest).is_err());
        assert!(LibverBounds::new(V200, Latest).is_ok());
    }
}
