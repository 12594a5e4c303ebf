//! Filter Pipeline message (type 0x000B): the filters applied to every chunk, in order.
//!
//! Version 1 (libhdf5's `EARLIEST` bound):
//!
//! | size   | field                                                                  |
//! |--------|------------------------------------------------------------------------|
//! | 1      | version = 1                                                            |
//! | 1      | number of filters (at most 32)                                         |
//! | 6      | reserved (zero)                                                        |
//! |        | per filter:                                                            |
//! | 2      | filter identification value                                            |
//! | 2      | name length: includes the NUL, padded to a multiple of 8 (0 = no name) |
//! | 2      | flags: bit 0 optional                                                  |
//! | 2      | number of client data values                                           |
//! | n      | name, NUL-terminated and NUL-padded to the name length                 |
//! | 4·k    | client data (u32 each)                                                 |
//! | 0 or 4 | padding (zero) when the number of client data values is odd            |
//!
//! Version 2 (libver `V18` and later): version = 2, number of filters; per filter: id (u16);
//! name length (u16) only if id ≥ 256; flags (u16); number of client data values (u16); name
//! (NUL-terminated, not padded) only if id ≥ 256; client data (u32 each), no padding.
//!
//! Names are kept as the stored bytes of the name field (terminator and padding included), so
//! a decoded pipeline re-encodes to its exact bytes.

use crate::cursor::{Decoder, Encoder};
use crate::error::{Error, Result};

use super::reserved;

const STRUCTURE: &str = "Filter Pipeline message";

/// The most filters a pipeline may hold (`H5Z_MAX_NFILTERS`).
pub const MAX_FILTERS: usize = 32;

/// Filter identification values below this one are libhdf5's own filters; version 2 stores no
/// name for them.
pub const FIRST_THIRD_PARTY_ID: u16 = 256;

/// Filter identification values.
pub mod id {
    /// gzip (zlib deflate); client data: [compression level].
    pub const DEFLATE: u16 = 1;
    /// Byte shuffle; client data: [element size].
    pub const SHUFFLE: u16 = 2;
    /// Fletcher-32 checksum appended to each chunk; no client data.
    pub const FLETCHER32: u16 = 3;
    /// SZIP compression.
    pub const SZIP: u16 = 4;
    /// N-bit packing.
    pub const NBIT: u16 = 5;
    /// Scale-offset compression.
    pub const SCALEOFFSET: u16 = 6;
    /// bzip2 compression (PyTables' and hdf5plugin's filter); client data: [block size in
    /// units of 100 kB, 1..=9].
    pub const BZIP2: u16 = 307;
    /// LZF compression (h5py's plugin); client data: [4, 261, chunk bytes].
    pub const LZF: u16 = 32000;
    /// Blosc (1.x); client data: [filter revision, Blosc version, type size, chunk bytes,
    /// level, shuffle (0 none, 1 byte, 2 bit), codec].
    pub const BLOSC: u16 = 32001;
    /// LZ4 compression (the HDF5 LZ4 filter); client data: [block size in bytes, 0 = 1 GiB].
    pub const LZ4: u16 = 32004;
    /// Bitshuffle; client data: [major, minor version, element size, block size in elements,
    /// compression (0 none, 2 LZ4, 3 Zstandard), Zstandard level].
    pub const BITSHUFFLE: u16 = 32008;
    /// Zstandard compression; client data: `[level]`.
    pub const ZSTD: u16 = 32015;
}

/// Filter flags bit 0: the filter is optional (it may be skipped for a chunk).
pub const FLAG_OPTIONAL: u16 = 0x0001;

/// Filter Pipeline message version.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum PipelineVersion {
    /// Version 1: names padded to 8 bytes, client data padded to 8 bytes.
    V1,
    /// Version 2: no names for libhdf5's own filters, no padding.
    V2,
}

impl PipelineVersion {
    /// The version number as stored.
    pub fn number(self) -> u8 {
        match self {
            PipelineVersion::V1 => 1,
            PipelineVersion::V2 => 2,
        }
    }
}

/// One filter of a pipeline.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Filter {
    /// Filter identification value.
    pub id: u16,
    /// Flags; bit 0 ([`FLAG_OPTIONAL`]) marks an optional filter.
    pub flags: u16,
    /// The stored name field: empty when there is no name, else the name, its NUL terminator
    /// and (version 1) NUL padding to a multiple of 8.
    pub name: Vec<u8>,
    /// Client data values.
    pub client_data: Vec<u32>,
}

impl Filter {
    /// A filter as libhdf5 would write it in a pipeline of `version`: with its registered
    /// name where that version stores one (see [`Filter::standard_name`]).
    pub fn new(version: PipelineVersion, id: u16, flags: u16, client_data: Vec<u32>) -> Filter {
        let stores_name = version == PipelineVersion::V1 || id >= FIRST_THIRD_PARTY_ID;
        let name = match Filter::standard_name(id) {
            Some(n) if stores_name => Filter::name_field(version, n.as_bytes()),
            _ => Vec::new(),
        };
        Filter {
            id,
            flags,
            name,
            client_data,
        }
    }

    /// The name libhdf5 (or h5py, for LZF, or the hdf5plugin package's filters) registers for
    /// a filter.
    pub fn standard_name(id: u16) -> Option<&'static str> {
        Some(match id {
            id::DEFLATE => "deflate",
            id::SHUFFLE => "shuffle",
            id::FLETCHER32 => "fletcher32",
            id::SZIP => "szip",
            id::NBIT => "nbit",
            id::SCALEOFFSET => "scaleoffset",
            id::LZF => "lzf",
            id::BZIP2 => "bzip2",
            id::BLOSC => "blosc",
            id::LZ4 => {
                "HDF5 lz4 filter; see https://github.com/HDFGroup/hdf5_plugins/blob/master/docs/RegisteredFilterPlugins.md"
            }
            id::BITSHUFFLE => "bitshuffle; see https://github.com/kiyo-masui/bitshuffle",
            id::ZSTD => {
                "HDF5 zstd filter; see https://github.com/HDFGroup/hdf5_plugins/blob/master/docs/RegisteredFilterPlugins.md"
            }
            _ => return None,
        })
    }

    /// The stored name field for `name` (without terminator) in a pipeline of `version`.
    pub fn name_field(version: PipelineVersion, name: &[u8]) -> Vec<u8> {
        let mut field = name.to_vec();
        field.push(0);
        if version == PipelineVersion::V1 {
            field.resize(field.len().next_multiple_of(8), 0);
        }
        field
    }

    /// The filter name without its terminator and padding (empty if none is stored).
    pub fn name(&self) -> &[u8] {
        match self.name.iter().position(|&b| b == 0) {
            Some(end) => self.name.get(..end).unwrap_or(&[]),
            None => &self.name,
        }
    }

    /// Whether the filter is optional.
    pub fn is_optional(&self) -> bool {
        self.flags & FLAG_OPTIONAL != 0
    }

    fn stores_name_length(&self, version: PipelineVersion) -> bool {
        version == PipelineVersion::V1 || self.id >= FIRST_THIRD_PARTY_ID
    }
}

/// A decoded Filter Pipeline message.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct FilterPipeline {
    /// Message version.
    pub version: PipelineVersion,
    /// The filters, in the order they are applied when writing.
    pub filters: Vec<Filter>,
}

impl FilterPipeline {
    /// Decode a Filter Pipeline message body.
    pub fn decode(d: &mut Decoder<'_>) -> Result<Self> {
        let at = d.addr();
        let version = match d.u8()? {
            1 => PipelineVersion::V1,
            2 => PipelineVersion::V2,
            v => return Err(d.bad_version(at, v)),
        };
        let at = d.addr();
        let nfilters = d.u8()?;
        if usize::from(nfilters) > MAX_FILTERS {
            return Err(d.bad_value(at, "number of filters", u64::from(nfilters)));
        }
        if version == PipelineVersion::V1 {
            reserved(d, 6)?;
        }
        // Each filter takes at least 6 bytes (id, flags, number of values).
        let n = d.check_count(u64::from(nfilters), 6)?;
        let mut filters = Vec::with_capacity(n);
        for _ in 0..n {
            filters.push(decode_filter(d, version)?);
        }
        Ok(FilterPipeline { version, filters })
    }

    /// Encode a Filter Pipeline message body.
    pub fn encode(&self, e: &mut Encoder<'_>) -> Result<()> {
        let n = match u8::try_from(self.filters.len()) {
            Ok(n) if usize::from(n) <= MAX_FILTERS => n,
            _ => {
                return Err(unencodable(format!(
                    "{} filters exceed the limit of 32",
                    self.filters.len()
                )));
            }
        };
        e.u8(self.version.number());
        e.u8(n);
        if self.version == PipelineVersion::V1 {
            e.zeros(6);
        }
        for f in &self.filters {
            e.u16(f.id);
            if f.stores_name_length(self.version) {
                if self.version == PipelineVersion::V1 && f.name.len() % 8 != 0 {
                    return Err(unencodable(format!(
                        "filter {} name field of {} bytes is not a multiple of 8",
                        f.id,
                        f.name.len()
                    )));
                }
                let len = u16::try_from(f.name.len()).map_err(|_| Error::TooWide {
                    structure: STRUCTURE,
                    field: "name length",
                    value: f.name.len() as u64,
                    width: 2,
                })?;
                e.u16(len);
            } else if !f.name.is_empty() {
                return Err(unencodable(format!(
                    "version 2 stores no name for filter {}",
                    f.id
                )));
            }
            e.u16(f.flags);
            let nvalues = u16::try_from(f.client_data.len()).map_err(|_| Error::TooWide {
                structure: STRUCTURE,
                field: "number of client data values",
                value: f.client_data.len() as u64,
                width: 2,
            })?;
            e.u16(nvalues);
            e.bytes(&f.name);
            for &v in &f.client_data {
                e.u32(v);
            }
            if self.version == PipelineVersion::V1 && nvalues % 2 == 1 {
                e.u32(0);
            }
        }
        Ok(())
    }

    /// The body's encoded length.
    pub fn encoded_len(&self) -> usize {
        let mut len: usize = match self.version {
            PipelineVersion::V1 => 8,
            PipelineVersion::V2 => 2,
        };
        for f in &self.filters {
            let mut n = 6usize;
            if f.stores_name_length(self.version) {
                n = n.saturating_add(2);
            }
            n = n
                .saturating_add(f.name.len())
                .saturating_add(f.client_data.len().saturating_mul(4));
            if self.version == PipelineVersion::V1 && f.client_data.len() % 2 == 1 {
                n = n.saturating_add(4);
            }
            len = len.saturating_add(n);
        }
        len
    }
}

fn decode_filter(d: &mut Decoder<'_>, version: PipelineVersion) -> Result<Filter> {
    let id = d.u16()?;
    let name_at = d.addr();
    let name_len = if version == PipelineVersion::V1 || id >= FIRST_THIRD_PARTY_ID {
        let len = d.u16()?;
        if version == PipelineVersion::V1 && len % 8 != 0 {
            return Err(d.bad_value(name_at, "name length", u64::from(len)));
        }
        len
    } else {
        0
    };
    let flags = d.u16()?;
    let nvalues = d.u16()?;
    let name_field_at = d.addr();
    let name = d.bytes(usize::from(name_len))?;
    if !name.is_empty() && !name.contains(&0) {
        return Err(d.invalid(name_field_at, "filter name is not NUL-terminated"));
    }
    let n = d.check_count(u64::from(nvalues), 4)?;
    let mut client_data = Vec::with_capacity(n);
    for _ in 0..n {
        client_data.push(d.u32()?);
    }
    if version == PipelineVersion::V1 && nvalues % 2 == 1 {
        reserved(d, 4)?;
    }
    Ok(Filter {
        id,
        flags,
        name: name.to_vec(),
        client_data,
    })
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
    use crate::{Addr, Sizes};

    use PipelineVersion::{V1, V2};

    fn decode(body: &[u8]) -> Result<FilterPipeline> {
        FilterPipeline::decode(&mut Decoder::new(
            body,
            Addr(0x100),
            Sizes::DEFAULT,
            STRUCTURE,
        ))
    }

    fn encode(p: &FilterPipeline) -> Vec<u8> {
        let mut out = Vec::new();
        p.encode(&mut Encoder::new(&mut out, Sizes::DEFAULT, STRUCTURE))
            .unwrap();
        assert_eq!(out.len(), p.encoded_len());
        out
    }

    fn pipeline(version: PipelineVersion, filters: &[(u16, u16, &[u32])]) -> FilterPipeline {
        FilterPipeline {
            version,
            filters: filters
                .iter()
                .map(|&(id, flags, cd)| Filter::new(version, id, flags, cd.to_vec()))
                .collect(),
        }
    }

    /// Every pipeline of docs/format/file-format.md §4.4.
    #[rustfmt::skip]
    fn cases() -> Vec<(&'static str, Vec<u8>, FilterPipeline)> {
        let mut earliest_sgf = vec![
            0x01, 0x03,                 // version 1, 3 filters
            0, 0, 0, 0, 0, 0,           // reserved
            0x02, 0x00,                 // id 2 (shuffle)
            0x08, 0x00,                 // name length 8
            0x01, 0x00,                 // flags: optional
            0x01, 0x00,                 // 1 client data value
        ];
        earliest_sgf.extend_from_slice(b"shuffle\0"); // name
        earliest_sgf.extend_from_slice(&[
            0x04, 0, 0, 0,              // client data: element size 4
            0, 0, 0, 0,                 // padding after an odd number of values
            0x01, 0x00,                 // id 1 (deflate)
            0x08, 0x00,                 // name length 8
            0x01, 0x00,                 // flags: optional
            0x01, 0x00,                 // 1 client data value
        ]);
        earliest_sgf.extend_from_slice(b"deflate\0"); // name
        earliest_sgf.extend_from_slice(&[
            0x04, 0, 0, 0,              // client data: level 4
            0, 0, 0, 0,                 // padding
            0x03, 0x00,                 // id 3 (fletcher32)
            0x10, 0x00,                 // name length 16
            0x00, 0x00,                 // flags: mandatory
            0x00, 0x00,                 // no client data
        ]);
        earliest_sgf.extend_from_slice(b"fletcher32\0\0\0\0\0\0"); // name, padded to 16
        let mut earliest_gzip = vec![
            0x01, 0x01,                 // version 1, 1 filter
            0, 0, 0, 0, 0, 0,           // reserved
            0x01, 0x00,                 // id 1 (deflate)
            0x08, 0x00,                 // name length 8
            0x01, 0x00,                 // flags: optional
            0x01, 0x00,                 // 1 client data value
        ];
        earliest_gzip.extend_from_slice(b"deflate\0");
        earliest_gzip.extend_from_slice(&[
            0x04, 0, 0, 0,              // level 4
            0, 0, 0, 0,                 // padding
        ]);
        vec![
            ("latest gzip", vec![
                0x02, 0x01,             // version 2, 1 filter
                0x01, 0x00,             // id 1 (deflate), no name length below 256
                0x01, 0x00,             // flags: optional
                0x01, 0x00,             // 1 client data value
                0x04, 0, 0, 0,          // level 4
            ], pipeline(V2, &[(id::DEFLATE, 1, &[4])])),
            ("latest shuffle+gzip+fletcher32", vec![
                0x02, 0x03,             // version 2, 3 filters
                0x02, 0x00, 0x01, 0x00, 0x01, 0x00, // shuffle, optional, 1 value
                0x04, 0, 0, 0,          // element size 4
                0x01, 0x00, 0x01, 0x00, 0x01, 0x00, // deflate, optional, 1 value
                0x04, 0, 0, 0,          // level 4
                0x03, 0x00, 0x00, 0x00, 0x00, 0x00, // fletcher32, mandatory, no values
            ], pipeline(V2, &[(id::SHUFFLE, 1, &[4]), (id::DEFLATE, 1, &[4]), (id::FLETCHER32, 0, &[])])),
            ("latest fletcher32", vec![
                0x02, 0x01,             // version 2, 1 filter
                0x03, 0x00,             // id 3 (fletcher32)
                0x00, 0x00,             // flags: mandatory
                0x00, 0x00,             // no client data
            ], pipeline(V2, &[(id::FLETCHER32, 0, &[])])),
            ("latest lzf", vec![
                0x02, 0x01,             // version 2, 1 filter
                0x00, 0x7d,             // id 32000 (lzf)
                0x04, 0x00,             // name length 4
                0x01, 0x00,             // flags: optional
                0x03, 0x00,             // 3 client data values
                b'l', b'z', b'f', 0x00, // name, NUL-terminated, unpadded
                0x04, 0, 0, 0,          // 4
                0x05, 0x01, 0, 0,       // 261
                0x10, 0, 0, 0,          // chunk bytes 16
            ], pipeline(V2, &[(id::LZF, 1, &[4, 261, 16])])),
            ("earliest gzip", earliest_gzip, pipeline(V1, &[(id::DEFLATE, 1, &[4])])),
            ("earliest shuffle+gzip+fletcher32", earliest_sgf,
                pipeline(V1, &[(id::SHUFFLE, 1, &[4]), (id::DEFLATE, 1, &[4]), (id::FLETCHER32, 0, &[])])),
        ]
    }

    #[test]
    fn decode_every_documented_pipeline() {
        for (name, bytes, expected) in cases() {
            let p = decode(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(p, expected, "{name}");
            assert_eq!(encode(&p), bytes, "{name}");
        }
        let p = decode(&cases()[5].1).unwrap();
        assert_eq!(p.filters[2].name(), b"fletcher32");
        assert!(!p.filters[2].is_optional());
        assert!(p.filters[0].is_optional());
        assert_eq!(decode(&cases()[0].1).unwrap().filters[0].name(), b"");
    }

    #[test]
    fn roundtrip_unnamed_and_odd_names() {
        // A third-party filter without a name, in both versions, and an unknown v1 name.
        for version in [V1, V2] {
            let p = FilterPipeline {
                version,
                filters: vec![
                    Filter {
                        id: 307,
                        flags: 0,
                        name: vec![],
                        client_data: vec![1, 2, 3],
                    },
                    Filter {
                        id: 999,
                        flags: 1,
                        name: Filter::name_field(version, b"bzip2-ish"),
                        client_data: vec![],
                    },
                ],
            };
            assert_eq!(decode(&encode(&p)).unwrap(), p);
        }
    }

    #[test]
    fn rejects_truncation() {
        for (name, bytes, _) in cases() {
            for n in 0..bytes.len() {
                assert!(decode(&bytes[..n]).is_err(), "{name} prefix {n}");
            }
        }
    }

    #[test]
    fn rejects_bad_values_with_address() {
        assert!(matches!(
            decode(&[0x03, 0x00]),
            Err(Error::BadVersion {
                at: Addr(0x100),
                version: 3,
                ..
            })
        ));
        assert!(matches!(
            decode(&[0x02, 33]),
            Err(Error::BadValue {
                at: Addr(0x101),
                value: 33,
                ..
            })
        ));
        // 32 filters claimed in 2 bytes: refused before allocating.
        assert!(matches!(
            decode(&[0x02, 32, 0, 0]),
            Err(Error::Truncated { .. })
        ));
        let mut b = cases()[4].1.clone();
        b[10] = 7; // v1 name length not a multiple of 8
        assert!(matches!(
            decode(&b),
            Err(Error::BadValue {
                at: Addr(0x10a),
                value: 7,
                ..
            })
        ));
        let mut b = cases()[4].1.clone();
        b[3] = 1; // reserved
        assert!(matches!(
            decode(&b),
            Err(Error::BadValue {
                at: Addr(0x103),
                ..
            })
        ));
        let mut b = cases()[4].1.clone();
        b[28] = 1; // padding after the odd client value
        assert!(matches!(
            decode(&b),
            Err(Error::BadValue {
                at: Addr(0x11c),
                ..
            })
        ));
        let mut b = cases()[3].1.clone();
        b[13] = b'!'; // name without its NUL
        assert!(matches!(
            decode(&b),
            Err(Error::Invalid {
                at: Addr(0x10a),
                ..
            })
        ));
        // Many client values claimed: refused before allocating.
        assert!(matches!(
            decode(&[0x02, 1, 1, 0, 0, 0, 0xff, 0xff, 1, 2, 3, 4]),
            Err(Error::Truncated { .. })
        ));
    }

    #[test]
    fn rejects_unencodable() {
        let mut p = pipeline(V2, &[(id::DEFLATE, 1, &[4])]);
        p.filters[0].name = b"deflate\0".to_vec();
        let mut out = Vec::new();
        assert!(matches!(
            p.encode(&mut Encoder::new(&mut out, Sizes::DEFAULT, STRUCTURE)),
            Err(Error::Unencodable { .. })
        ));
        let mut p = pipeline(V1, &[(id::DEFLATE, 1, &[4])]);
        p.filters[0].name = b"deflate".to_vec();
        assert!(matches!(
            p.encode(&mut Encoder::new(&mut out, Sizes::DEFAULT, STRUCTURE)),
            Err(Error::Unencodable { .. })
        ));
    }
}
