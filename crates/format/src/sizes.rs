//! The superblock's field widths: the size of offsets and the size of lengths.

use crate::addr::{Addr, all_ones};
use crate::error::{Error, Result};

/// The superblock's "size of offsets" (O) and "size of lengths" (L), in bytes.
///
/// They set the width of every address and length field in the file. libhdf5 accepts 2, 4, 8,
/// 16 and 32; h5chunk handles 2, 4 and 8 (every file libhdf5 writes by default uses 8/8) and
/// reports the wider ones as unsupported.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Sizes {
    offsets: u8,
    lengths: u8,
}

impl Sizes {
    /// O = L = 8, what libhdf5 and h5py write by default.
    pub const DEFAULT: Sizes = Sizes {
        offsets: 8,
        lengths: 8,
    };

    /// Validated widths. `at` is the file address the widths were read from, for the error.
    pub fn new(offsets: u8, lengths: u8, at: Addr) -> Result<Sizes> {
        for (field, v) in [("size of offsets", offsets), ("size of lengths", lengths)] {
            match v {
                2 | 4 | 8 => {}
                16 | 32 => {
                    return Err(Error::Unsupported {
                        structure: "superblock",
                        at,
                        what: "sizes of offsets or lengths wider than 8 bytes",
                    });
                }
                _ => {
                    return Err(Error::BadValue {
                        structure: "superblock",
                        at,
                        field,
                        value: u64::from(v),
                    });
                }
            }
        }
        Ok(Sizes { offsets, lengths })
    }

    /// Size of offsets (O), in bytes.
    #[inline]
    pub const fn offsets(self) -> u8 {
        self.offsets
    }

    /// Size of lengths (L), in bytes.
    #[inline]
    pub const fn lengths(self) -> u8 {
        self.lengths
    }

    /// The all-ones value of an O-byte field: the undefined address.
    #[inline]
    pub const fn undef_offset(self) -> u64 {
        all_ones(self.offsets)
    }

    /// The all-ones value of an L-byte field (used for "unlimited").
    #[inline]
    pub const fn undef_length(self) -> u64 {
        all_ones(self.lengths)
    }
}

impl Default for Sizes {
    fn default() -> Self {
        Sizes::DEFAULT
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_accept_2_4_8_only() {
        assert!(Sizes::new(8, 8, Addr(13)).is_ok());
        assert!(Sizes::new(4, 2, Addr(13)).is_ok());
        assert!(matches!(
            Sizes::new(16, 8, Addr(13)),
            Err(Error::Unsupported { .. })
        ));
        assert!(matches!(
            Sizes::new(3, 8, Addr(13)),
            Err(Error::BadValue { value: 3, .. })
        ));
    }

    #[test]
    fn undefined_values_are_all_ones() {
        assert_eq!(Sizes::DEFAULT.undef_offset(), u64::MAX);
        assert_eq!(Sizes::new(4, 2, Addr(0)).unwrap().undef_length(), 0xffff);
    }
}
