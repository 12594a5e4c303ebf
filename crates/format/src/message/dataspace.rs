//! Dataspace message (type 0x0001): the rank, current dimensions and maximum dimensions of a
//! dataset or attribute.
//!
//! Version 1:
//!
//! | off | size   | field                                                        |
//! |-----|--------|--------------------------------------------------------------|
//! | 0   | 1      | version = 1                                                  |
//! | 1   | 1      | dimensionality (rank, at most 32)                            |
//! | 2   | 1      | flags: bit 0 maximum dimensions present; bit 1 permutation   |
//! | 3   | 5      | reserved (zero)                                              |
//! | 8   | L·rank | dimension sizes                                              |
//! |     | L·rank | dimension maximum sizes (flag bit 0); all ones = unlimited   |
//!
//! Version 2:
//!
//! | off | size   | field                                                        |
//! |-----|--------|--------------------------------------------------------------|
//! | 0   | 1      | version = 2                                                  |
//! | 1   | 1      | dimensionality                                               |
//! | 2   | 1      | flags: bit 0 maximum dimensions present                      |
//! | 3   | 1      | type: 0 scalar, 1 simple, 2 null                             |
//! | 4   | L·rank | dimension sizes                                              |
//! |     | L·rank | dimension maximum sizes (flag bit 0)                         |
//!
//! The permutation index (version 1 flag bit 1) was never written by libhdf5, which also
//! ignores it on read; h5chunk reports it as unsupported rather than guess its layout.

use crate::Sizes;
use crate::cursor::{Decoder, Encoder};
use crate::error::{Error, Result};

use super::reserved;

/// The largest rank HDF5 allows (`H5S_MAX_RANK`).
pub const MAX_RANK: usize = 32;

const FLAG_MAX_DIMS: u8 = 0x01;
const FLAG_PERMUTATION: u8 = 0x02;
const STRUCTURE: &str = "Dataspace message";

/// Dataspace message version.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum DataspaceVersion {
    /// Version 1: libhdf5's `EARLIEST` bound; no type byte, 5 reserved bytes.
    V1,
    /// Version 2: libver `V18` and later; explicit type byte.
    V2,
}

impl DataspaceVersion {
    /// The version number as stored.
    pub fn number(self) -> u8 {
        match self {
            DataspaceVersion::V1 => 1,
            DataspaceVersion::V2 => 2,
        }
    }
}

/// The dataspace "type" (version 2), derived from the rank in version 1.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum DataspaceKind {
    /// A single element (rank 0).
    Scalar,
    /// A regular N-dimensional array.
    Simple,
    /// No elements at all (version 2 only).
    Null,
}

/// A dimension maximum size.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Extent {
    /// The dimension may grow up to this size.
    Fixed(u64),
    /// The dimension may grow without bound (stored as the all-ones L-byte value).
    Unlimited,
}

impl Extent {
    fn to_option(self) -> Option<u64> {
        match self {
            Extent::Fixed(v) => Some(v),
            Extent::Unlimited => None,
        }
    }
}

/// A decoded Dataspace message.
///
/// `max_dims` is `Some` exactly when the message stores maximum dimensions (flag bit 0), even
/// if they equal the current ones, so that re-encoding reproduces the stored bytes.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Dataspace {
    /// Message version.
    pub version: DataspaceVersion,
    /// Scalar, simple or null.
    pub kind: DataspaceKind,
    /// Dimension sizes (the current extent), one per dimension.
    pub dims: Vec<u64>,
    /// Dimension maximum sizes, one per dimension, if stored.
    pub max_dims: Option<Vec<Extent>>,
}

impl Dataspace {
    /// A version 2 simple dataspace. libhdf5 stores maximum dimensions whenever they differ
    /// from the current ones (always when one is unlimited) and omits them otherwise.
    pub fn simple(dims: Vec<u64>, max_dims: Option<Vec<Extent>>) -> Self {
        Dataspace {
            version: DataspaceVersion::V2,
            kind: DataspaceKind::Simple,
            dims,
            max_dims,
        }
    }

    /// A version 2 scalar dataspace.
    pub fn scalar() -> Self {
        Dataspace {
            version: DataspaceVersion::V2,
            kind: DataspaceKind::Scalar,
            dims: Vec::new(),
            max_dims: None,
        }
    }

    /// The dimensionality (rank).
    pub fn rank(&self) -> usize {
        self.dims.len()
    }

    /// The maximum size of dimension `i`: the stored maximum, else the current size.
    pub fn max_dim(&self, i: usize) -> Option<Extent> {
        match &self.max_dims {
            Some(m) => m.get(i).copied(),
            None => self.dims.get(i).copied().map(Extent::Fixed),
        }
    }

    /// The number of elements: the product of the current dimensions (1 for a scalar, 0 for a
    /// null dataspace), `None` if it does not fit in 64 bits (a decoded dataspace always fits).
    pub fn element_count(&self) -> Option<u64> {
        if self.kind == DataspaceKind::Null {
            return Some(0);
        }
        self.dims.iter().try_fold(1u64, |n, &d| n.checked_mul(d))
    }

    /// Decode a Dataspace message body.
    pub fn decode(d: &mut Decoder<'_>) -> Result<Self> {
        let at = d.addr();
        let version = match d.u8()? {
            1 => DataspaceVersion::V1,
            2 => DataspaceVersion::V2,
            v => return Err(d.bad_version(at, v)),
        };
        let at = d.addr();
        let rank = d.u8()?;
        if usize::from(rank) > MAX_RANK {
            return Err(d.bad_value(at, "dimensionality", u64::from(rank)));
        }
        let at = d.addr();
        let flags = d.u8()?;
        if flags & FLAG_PERMUTATION != 0 && version == DataspaceVersion::V1 {
            return Err(d.unsupported(at, "dataspace permutation index"));
        }
        if flags & !FLAG_MAX_DIMS != 0 {
            return Err(d.bad_value(at, "flags", u64::from(flags)));
        }
        let kind = match version {
            DataspaceVersion::V1 => {
                reserved(d, 5)?;
                if rank == 0 {
                    DataspaceKind::Scalar
                } else {
                    DataspaceKind::Simple
                }
            }
            DataspaceVersion::V2 => {
                let at = d.addr();
                match d.u8()? {
                    0 => DataspaceKind::Scalar,
                    1 => DataspaceKind::Simple,
                    2 => DataspaceKind::Null,
                    v => return Err(d.bad_value(at, "dataspace type", u64::from(v))),
                }
            }
        };
        let l = usize::from(d.sizes().lengths());
        let n = d.check_count(u64::from(rank), l)?;
        let mut dims = Vec::with_capacity(n);
        let mut elements = 1u64;
        for _ in 0..n {
            let field = d.addr();
            // libhdf5's rules for a current dimension: a size, never the unlimited marker (all
            // ones, which only a maximum may hold), and a product of sizes, the element count,
            // that fits in 64 bits. A file breaking them describes a dataset that cannot exist.
            let Some(v) = d.length_or_undef()? else {
                return Err(d.bad_value(
                    field,
                    "current dimension equal to the unlimited marker",
                    d.sizes().undef_length(),
                ));
            };
            elements = elements
                .checked_mul(v)
                .ok_or_else(|| d.bad_value(field, "dimension: elements beyond 2^64", v))?;
            dims.push(v);
        }
        let max_dims = if flags & FLAG_MAX_DIMS != 0 {
            let n = d.check_count(u64::from(rank), l)?;
            let mut max = Vec::with_capacity(n);
            for i in 0..n {
                let field = d.addr();
                max.push(match d.length_or_undef()? {
                    // A dimension beyond its own maximum: libhdf5 refuses the message.
                    Some(v) if dims.get(i).is_some_and(|&cur| cur > v) => {
                        return Err(d.bad_value(field, "maximum dimension below the current", v));
                    }
                    Some(v) => Extent::Fixed(v),
                    None => Extent::Unlimited,
                });
            }
            Some(max)
        } else {
            None
        };
        Ok(Dataspace {
            version,
            kind,
            dims,
            max_dims,
        })
    }

    /// Encode a Dataspace message body.
    pub fn encode(&self, e: &mut Encoder<'_>) -> Result<()> {
        let rank = match u8::try_from(self.dims.len()) {
            Ok(r) if usize::from(r) <= MAX_RANK => r,
            _ => return Err(unencodable(format!("rank {} exceeds 32", self.dims.len()))),
        };
        if let Some(max) = &self.max_dims
            && max.len() != self.dims.len()
        {
            return Err(unencodable(format!(
                "{} maximum dimensions for rank {}",
                max.len(),
                rank
            )));
        }
        let type_byte = match self.kind {
            DataspaceKind::Scalar => 0,
            DataspaceKind::Simple => 1,
            DataspaceKind::Null => 2,
        };
        if self.version == DataspaceVersion::V1 {
            let expected = if rank == 0 {
                DataspaceKind::Scalar
            } else {
                DataspaceKind::Simple
            };
            if self.kind != expected {
                return Err(unencodable(format!(
                    "a version 1 dataspace of rank {rank} cannot be {:?}",
                    self.kind
                )));
            }
        }
        e.u8(self.version.number());
        e.u8(rank);
        e.u8(if self.max_dims.is_some() {
            FLAG_MAX_DIMS
        } else {
            0
        });
        match self.version {
            DataspaceVersion::V1 => e.zeros(5),
            DataspaceVersion::V2 => e.u8(type_byte),
        }
        for &v in &self.dims {
            e.length(v, "dimension size")?;
        }
        if let Some(max) = &self.max_dims {
            for m in max {
                e.length_or_undef(m.to_option(), "dimension maximum size")?;
            }
        }
        Ok(())
    }

    /// The body's encoded length.
    pub fn encoded_len(&self, sizes: Sizes) -> usize {
        let header = match self.version {
            DataspaceVersion::V1 => 8usize,
            DataspaceVersion::V2 => 4,
        };
        let per_dim = usize::from(sizes.lengths());
        let n = self
            .dims
            .len()
            .saturating_add(self.max_dims.as_ref().map_or(0, Vec::len));
        header.saturating_add(n.saturating_mul(per_dim))
    }
}

fn unencodable(reason: String) -> Error {
    Error::Unencodable {
        structure: STRUCTURE,
        reason,
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
    use crate::Addr;

    fn decode(body: &[u8]) -> Result<Dataspace> {
        Dataspace::decode(&mut Decoder::new(
            body,
            Addr(0xbb),
            Sizes::DEFAULT,
            STRUCTURE,
        ))
    }

    fn encode(ds: &Dataspace) -> Vec<u8> {
        let mut out = Vec::new();
        ds.encode(&mut Encoder::new(&mut out, Sizes::DEFAULT, STRUCTURE))
            .unwrap();
        assert_eq!(out.len(), ds.encoded_len(Sizes::DEFAULT));
        out
    }

    #[test]
    fn a_dimension_beyond_its_maximum_is_refused() {
        #[rustfmt::skip]
        let body = [
            0x02, 0x01, 0x01, 0x01,      // version 2, rank 1, max present, simple
            0x28, 0, 0, 0, 0, 0, 0, 0,   // dims[0] = 40
            0x27, 0, 0, 0, 0, 0, 0, 0,   // max[0] = 39
        ];
        assert!(matches!(
            decode(&body),
            Err(Error::BadValue {
                field: "maximum dimension below the current",
                value: 39,
                ..
            })
        ));
        let mut equal = body;
        equal[12] = 0x28;
        assert_eq!(decode(&equal).unwrap().dims, vec![40]);
    }

    /// The unlimited marker is a maximum, never a size: libhdf5 writes no such current
    /// dimension, and a dataset of 2^64 - 1 rows would read fill values for ever.
    #[test]
    fn a_current_dimension_equal_to_the_unlimited_marker_is_refused() {
        #[rustfmt::skip]
        let body = [
            0x02, 0x01, 0x01, 0x01,                         // version 2, rank 1, max, simple
            0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // dims[0] = all ones
            0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // max[0] = unlimited
        ];
        assert!(matches!(
            decode(&body),
            Err(Error::BadValue {
                field: "current dimension equal to the unlimited marker",
                at: Addr(0xbf),
                ..
            })
        ));
        let mut one_less = body;
        one_less[4] = 0xfe;
        let ds = decode(&one_less).unwrap();
        assert_eq!(ds.dims, vec![u64::MAX - 1]);
        assert_eq!(ds.element_count(), Some(u64::MAX - 1));
    }

    /// Dimensions whose product (the element count) passes 2^64 are refused at the dimension
    /// that makes it overflow; 2^32 x 2^32 - 1 still fits.
    #[test]
    fn an_element_count_beyond_64_bits_is_refused() {
        #[rustfmt::skip]
        let body = [
            0x02, 0x02, 0x00, 0x01,      // version 2, rank 2, no max, simple
            0, 0, 0, 0, 1, 0, 0, 0,      // dims[0] = 2^32
            0, 0, 0, 0, 1, 0, 0, 0,      // dims[1] = 2^32
        ];
        assert!(matches!(
            decode(&body),
            Err(Error::BadValue {
                field: "dimension: elements beyond 2^64",
                at: Addr(0xc7),
                value: 0x1_0000_0000,
                ..
            })
        ));
        let mut fits = body;
        fits[12..20].copy_from_slice(&0xffff_ffffu64.to_le_bytes());
        let ds = decode(&fits).unwrap();
        assert_eq!(ds.element_count(), Some(0xffff_ffff_0000_0000));
        let overflowing = Dataspace::simple(vec![1 << 32, 1 << 32], None);
        assert_eq!(overflowing.element_count(), None);
    }

    #[rustfmt::skip]
    const V1_UNLIMITED: [u8; 24] = [
        0x01,                   // version 1
        0x01,                   // rank 1
        0x01,                   // flags: max dims present
        0x00, 0, 0, 0, 0,       // reserved
        0, 0, 0, 0, 0, 0, 0, 0, // dims[0] = 0
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // max[0] = unlimited
    ];

    #[rustfmt::skip]
    const V2_UNLIMITED: [u8; 20] = [
        0x02,                   // version 2
        0x01,                   // rank 1
        0x01,                   // flags: max dims present
        0x01,                   // type: simple
        0, 0, 0, 0, 0, 0, 0, 0, // dims[0] = 0
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // max[0] = unlimited
    ];

    #[rustfmt::skip]
    const V2_DIMS_10: [u8; 20] = [
        0x02, 0x01, 0x01, 0x01,      // version 2, rank 1, max present, simple
        0x0a, 0, 0, 0, 0, 0, 0, 0,   // dims[0] = 10
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // max[0] = unlimited
    ];

    #[rustfmt::skip]
    const V2_SCALAR: [u8; 4] = [
        0x02, // version 2
        0x00, // rank 0
        0x00, // flags
        0x00, // type: scalar
    ];

    #[test]
    fn decode_v1_unlimited() {
        let ds = decode(&V1_UNLIMITED).unwrap();
        assert_eq!(ds.version, DataspaceVersion::V1);
        assert_eq!(ds.kind, DataspaceKind::Simple);
        assert_eq!(ds.dims, vec![0]);
        assert_eq!(ds.max_dims, Some(vec![Extent::Unlimited]));
        assert_eq!(encode(&ds), V1_UNLIMITED);
    }

    #[test]
    fn decode_v2_unlimited_and_constructor() {
        let ds = decode(&V2_UNLIMITED).unwrap();
        assert_eq!(
            ds,
            Dataspace::simple(vec![0], Some(vec![Extent::Unlimited]))
        );
        assert_eq!(encode(&ds), V2_UNLIMITED);
        let ds = decode(&V2_DIMS_10).unwrap();
        assert_eq!(ds.dims, vec![10]);
        assert_eq!(ds.max_dim(0), Some(Extent::Unlimited));
        assert_eq!(encode(&ds), V2_DIMS_10);
    }

    #[test]
    fn roundtrip_scalar_null_and_fixed_max() {
        let ds = decode(&V2_SCALAR).unwrap();
        assert_eq!(ds, Dataspace::scalar());
        assert_eq!(encode(&ds), V2_SCALAR);
        let null = Dataspace {
            kind: DataspaceKind::Null,
            ..Dataspace::scalar()
        };
        assert_eq!(decode(&encode(&null)).unwrap(), null);
        // Max dims equal to the dims are kept when stored.
        let same = Dataspace::simple(vec![3, 4], Some(vec![Extent::Fixed(3), Extent::Fixed(4)]));
        assert_eq!(decode(&encode(&same)).unwrap(), same);
        let none = Dataspace::simple(vec![3, 4], None);
        assert_eq!(decode(&encode(&none)).unwrap(), none);
        assert_eq!(none.max_dim(1), Some(Extent::Fixed(4)));
    }

    #[test]
    fn roundtrip_narrow_lengths() {
        let sizes = Sizes::new(4, 2, Addr(0)).unwrap();
        let ds = Dataspace::simple(vec![7], Some(vec![Extent::Unlimited]));
        let mut out = Vec::new();
        ds.encode(&mut Encoder::new(&mut out, sizes, STRUCTURE))
            .unwrap();
        assert_eq!(out, [2, 1, 1, 1, 7, 0, 0xff, 0xff]);
        let back = Dataspace::decode(&mut Decoder::new(&out, Addr(0), sizes, STRUCTURE)).unwrap();
        assert_eq!(back, ds);
    }

    #[test]
    fn rejects_truncation() {
        for body in [&V1_UNLIMITED[..], &V2_UNLIMITED, &V2_SCALAR] {
            for n in 0..body.len() {
                assert!(decode(&body[..n]).is_err(), "prefix {n}");
            }
        }
    }

    #[test]
    fn rejects_bad_values_with_address() {
        let mut b = V2_UNLIMITED;
        b[0] = 3;
        assert!(matches!(
            decode(&b),
            Err(Error::BadVersion {
                at: Addr(0xbb),
                version: 3,
                ..
            })
        ));
        let mut b = V2_UNLIMITED;
        b[1] = 33;
        assert!(matches!(
            decode(&b),
            Err(Error::BadValue {
                at: Addr(0xbc),
                value: 33,
                ..
            })
        ));
        let mut b = V2_UNLIMITED;
        b[2] = 0x04;
        assert!(matches!(
            decode(&b),
            Err(Error::BadValue { at: Addr(0xbd), .. })
        ));
        let mut b = V2_UNLIMITED;
        b[3] = 3;
        assert!(matches!(
            decode(&b),
            Err(Error::BadValue {
                at: Addr(0xbe),
                value: 3,
                ..
            })
        ));
        let mut b = V1_UNLIMITED;
        b[2] = 0x03;
        assert!(matches!(
            decode(&b),
            Err(Error::Unsupported { at: Addr(0xbd), .. })
        ));
        let mut b = V1_UNLIMITED;
        b[5] = 1;
        assert!(matches!(
            decode(&b),
            Err(Error::BadValue { at: Addr(0xc0), .. })
        ));
    }

    #[test]
    fn rejects_unencodable() {
        let bad = Dataspace::simple(vec![1, 2], Some(vec![Extent::Unlimited]));
        let mut out = Vec::new();
        assert!(matches!(
            bad.encode(&mut Encoder::new(&mut out, Sizes::DEFAULT, STRUCTURE)),
            Err(Error::Unencodable { .. })
        ));
        let null_v1 = Dataspace {
            version: DataspaceVersion::V1,
            kind: DataspaceKind::Null,
            dims: vec![],
            max_dims: None,
        };
        assert!(
            null_v1
                .encode(&mut Encoder::new(&mut out, Sizes::DEFAULT, STRUCTURE))
                .is_err()
        );
    }
}
