//! Attributes of groups and datasets: small named values stored with their object (units,
//! CF conventions, NeXus classes, instrument settings), read as h5py's `obj.attrs` reads them.
//!
//! Compact storage (attribute messages in the object header, versions 1 to 3) is read and
//! written; dense storage (a fractal heap and a v2 B-tree of names) is read, and written as
//! libhdf5 writes it: a version 2 header's ninth attribute moves them all there. Changes to
//! dense attributes go into the heap h5chunk or libhdf5 made. An object tracking attribute
//! creation order (h5py's `track_order`) gets each new attribute with the next creation index,
//! in its header message or, dense, in its name record and creation-order index (type 9).
//! Attributes are written as h5py writes them: numbers in their Rust type's little-endian
//! form, strings as variable-length UTF-8 (h5py's `str`) with their bytes in a new global heap
//! collection, attribute message version 1 in a version 1 object header and version 3 in a
//! version 2 one.
//!
//! Values read: numbers of every integer and float type h5py writes (in either byte order), fixed-
//! and variable-length strings (ASCII or UTF-8; variable-length ones live in the file's global
//! heap), and the raw bytes of anything else with its [`Datatype`] for inspection.

use std::collections::HashMap;

use h5chunk_format::Addr;
use h5chunk_format::global_heap::{GlobalHeapCollection, HeapId};
use h5chunk_format::message::{
    Attribute, CharSet, Dataspace, DataspaceKind, DataspaceVersion, Datatype, DatatypeClass,
    Extent, Message, MessageType, StringPadding, StringType, VarLenKind,
};
use h5chunk_format::object_header::MessageFlags;

use crate::error::{Error, Result};
use crate::meta::AttrInfo;
use crate::store::Store;
use crate::types::{H5Type, TypeDesc, from_le_bytes};
use crate::values::{NewValues, heap_strings, store_objects, string_ids, unpad};

/// One attribute, read: its name, shape, type and stored bytes.
#[derive(Clone, Debug)]
pub struct Attr {
    name: String,
    shape: Option<Vec<u64>>,
    datatype: Datatype,
    /// The elements, packed, in the file's byte order (variable-length elements: heap IDs).
    data: Vec<u8>,
    /// Variable-length strings, resolved from the global heap when the attribute was read.
    strings: Option<Vec<String>>,
}

impl Attr {
    /// The name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The shape: `[]` for a scalar, `None` for an empty attribute (h5py's `h5py.Empty`).
    pub fn shape(&self) -> Option<&[u64]> {
        self.shape.as_deref()
    }

    /// The number of elements (1 for a scalar, 0 when empty).
    pub fn len(&self) -> u64 {
        self.shape
            .as_ref()
            .map_or(0, |s| s.iter().copied().fold(1u64, u64::saturating_mul))
    }

    /// Whether it holds no element.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The element type as stored (every HDF5 class: see its [`DatatypeClass`]).
    pub fn datatype(&self) -> &Datatype {
        &self.datatype
    }

    /// The element type, when it is a number type h5chunk reads as `T`.
    pub fn dtype(&self) -> Result<TypeDesc> {
        TypeDesc::from_datatype(&self.datatype)
    }

    /// The stored bytes: the elements packed in the file's byte order (for variable-length
    /// types, their heap IDs).
    pub fn raw(&self) -> &[u8] {
        &self.data
    }

    /// The values as `T`: numbers of any integer or float type, converted from the stored
    /// one as libhdf5 converts them (an `i64` attribute read as `i32` when every value fits;
    /// [`Error::ValueOutOfRange`] names the first that does not).
    pub fn values<T: H5Type>(&self) -> Result<Vec<T>> {
        let desc = self.dtype()?;
        if (desc.class != T::DESC.class || desc.size != T::DESC.size)
            && crate::convert::convertible(desc, T::DESC)
        {
            // Numbers of another type, converted as libhdf5 converts them: an `i64` read as
            // `i32` when every value fits, a typed error naming the first that does not.
            let mut le = self.data.clone();
            desc.to_from_le(&mut le);
            let n = le.len().checked_div(desc.size).unwrap_or(0);
            let mut out = vec![0u8; n.saturating_mul(T::DESC.size)];
            crate::convert::convert(desc, &le, T::DESC, &mut out).map_err(|u| {
                Error::ValueOutOfRange {
                    object: format!("attribute {:?}", self.name),
                    index: u.index as u64,
                    value: u.value,
                    to: T::DESC.numpy(),
                }
            })?;
            return Ok(from_le_bytes(&out));
        }
        if desc.class != T::DESC.class || desc.size != T::DESC.size {
            return Err(Error::arg(
                "T",
                format!(
                    "attribute {:?} holds {}, not {}",
                    self.name,
                    desc.numpy(),
                    T::DESC.numpy()
                ),
            ));
        }
        let mut le = self.data.clone();
        for e in le.chunks_exact_mut(desc.size) {
            desc.to_from_le(e);
        }
        Ok(from_le_bytes(&le))
    }

    /// The one value of a scalar (or one-element) attribute, as `T`.
    pub fn value<T: H5Type>(&self) -> Result<T> {
        match self.values::<T>()?.as_slice() {
            [v] => Ok(*v),
            v => Err(Error::arg(
                "attribute",
                format!("{:?} holds {} values, not one", self.name, v.len()),
            )),
        }
    }

    /// The values of a string attribute (fixed- or variable-length), padding removed.
    pub fn strings(&self) -> Result<Vec<String>> {
        if let Some(s) = &self.strings {
            return Ok(s.clone());
        }
        let DatatypeClass::String(t) = &self.datatype.class else {
            return Err(Error::arg(
                "attribute",
                format!(
                    "{:?} holds {} values, not strings",
                    self.name,
                    self.datatype.class.name()
                ),
            ));
        };
        let size = usize::try_from(self.datatype.size).unwrap_or(usize::MAX);
        Ok(self
            .data
            .chunks_exact(size.max(1))
            .map(|e| unpad(e, *t))
            .collect())
    }

    /// The one string of a scalar (or one-element) string attribute.
    pub fn string(&self) -> Result<String> {
        let mut all = self.strings()?;
        match all.len() {
            1 => Ok(all.swap_remove(0)),
            n => Err(Error::arg(
                "attribute",
                format!("{:?} holds {n} strings, not one", self.name),
            )),
        }
    }

    /// A short text of the value for listings: numbers and strings (the first few), other
    /// types by their class.
    pub fn summary(&self) -> String {
        const SHOWN: usize = 6;
        fn list<T: std::fmt::Debug>(v: &[T], total: u64, scalar: bool) -> String {
            let shown: Vec<String> = v.iter().take(SHOWN).map(|x| format!("{x:?}")).collect();
            let more = if total > SHOWN as u64 { ", ..." } else { "" };
            if scalar {
                shown.join(", ")
            } else {
                format!("[{}{more}]", shown.join(", "))
            }
        }
        let scalar = self.shape.as_ref().is_some_and(|s| s.is_empty());
        if self.shape.is_none() {
            return "(empty)".into();
        }
        if let Ok(s) = self.strings() {
            return list(&s, self.len(), scalar);
        }
        let Ok(desc) = self.dtype() else {
            return format!("({} data)", self.datatype.class.name());
        };
        use crate::types::TypeClass::{BFloat16, Float, Int, Uint};
        let out = match (desc.class, desc.size) {
            (Int, 1) => self.values::<i8>().map(|v| list(&v, self.len(), scalar)),
            (Int, 2) => self.values::<i16>().map(|v| list(&v, self.len(), scalar)),
            (Int, 4) => self.values::<i32>().map(|v| list(&v, self.len(), scalar)),
            (Int, _) => self.values::<i64>().map(|v| list(&v, self.len(), scalar)),
            (Uint, 1) => self.values::<u8>().map(|v| list(&v, self.len(), scalar)),
            (Uint, 2) => self.values::<u16>().map(|v| list(&v, self.len(), scalar)),
            (Uint, 4) => self.values::<u32>().map(|v| list(&v, self.len(), scalar)),
            (Uint, _) => self.values::<u64>().map(|v| list(&v, self.len(), scalar)),
            (Float, 4) | (BFloat16, _) => {
                self.values::<f32>().map(|v| list(&v, self.len(), scalar))
            }
            (Float, _) => self.values::<f64>().map(|v| list(&v, self.len(), scalar)),
            _ => return format!("({} data)", self.datatype.class.name()),
        };
        out.unwrap_or_else(|e| format!("({e})"))
    }

    /// The type as a short name: numpy's for numbers, `str` for strings, the class otherwise.
    pub fn type_name(&self) -> String {
        match (&self.datatype.class, self.dtype()) {
            (_, Ok(d)) => d.numpy(),
            (DatatypeClass::String(_), _) => format!("|S{}", self.datatype.size),
            (
                DatatypeClass::VarLen {
                    kind: VarLenKind::String(_),
                    ..
                },
                _,
            ) => "str".into(),
            (c, _) => c.name().into(),
        }
    }
}

/// The attribute messages of the header at `header`, or why they cannot be listed, in the
/// order h5py lists them: by creation order when the object tracks it (h5py's
/// `track_order=True`), else by name (bytes compared as libhdf5 compares them); attributes
/// that cannot be decoded come last.
fn messages(f: &Store, header: Addr) -> Result<Vec<Result<Attribute>>> {
    let mut all = attributes_in(f, header)?;
    if f.header_attr_order(header)?.0 {
        all.sort_by_key(|(order, a)| (a.is_err(), *order));
    } else {
        all.sort_by(|(_, a), (_, b)| match (a, b) {
            (Ok(a), Ok(b)) => a.name.cmp(&b.name),
            (a, b) => a.is_err().cmp(&b.is_err()),
        });
    }
    Ok(all.into_iter().map(|(_, a)| a).collect())
}

/// The attribute messages of the header at `header` with their creation indexes (0 when not
/// tracked): those in the header in its order, then those in dense storage in the name
/// index's order (its records hold their creation indexes).
fn attributes_in(f: &Store, header: Addr) -> Result<Vec<(u32, Result<Attribute>)>> {
    let decode = |bytes: &[u8], at: Addr| decode_attribute(f, bytes, at);
    let mut out = Vec::new();
    for m in f.raw_messages(header)? {
        if m.kind == MessageType::ATTRIBUTE {
            out.push((
                u32::from(m.creation_order.unwrap_or(0)),
                decode(&m.data, header),
            ));
        } else if m.kind == MessageType::ATTRIBUTE_INFO
            && let Some((heap, names)) = dense_in_use(&m.data, header, f.sizes)?
        {
            for (bytes, order) in h5chunk_dense::attribute_messages(f, heap, names)? {
                out.push((order, decode(&bytes, heap)));
            }
        }
    }
    Ok(out)
}

/// An Attribute message body at `at`; a committed (named) datatype is read from its header.
fn decode_attribute(f: &Store, bytes: &[u8], at: Addr) -> Result<Attribute> {
    let mut d = h5chunk_format::cursor::Decoder::new(bytes, at, f.sizes, "Attribute message");
    let mut resolve = |named: Addr| {
        f.messages(named).ok()?.into_iter().find_map(|m| match m {
            Message::Datatype(t) => Some(t),
            _ => None,
        })
    };
    Ok(Attribute::decode_resolving(&mut d, &mut resolve)?)
}

/// The fractal heap and name index of the attributes of the object at `header`, when they
/// are stored densely.
pub(crate) fn dense_addresses(f: &Store, header: Addr) -> Result<Option<(Addr, Addr)>> {
    for m in f.messages(header)? {
        if let Message::Unknown { kind, data } = m
            && kind == MessageType::ATTRIBUTE_INFO
        {
            return dense_in_use(&data, header, f.sizes);
        }
    }
    Ok(None)
}

/// The fractal heap and name index of an Attribute Info message, when dense storage is in
/// use.
fn dense_in_use(
    data: &[u8],
    header: Addr,
    sizes: h5chunk_format::Sizes,
) -> Result<Option<(Addr, Addr)>> {
    Ok(AttrInfo::decode(data, header, sizes)?.dense())
}

/// The attributes of the object whose header is at `header`.
pub(crate) fn read_all(f: &Store, header: Addr) -> Result<Vec<Attr>> {
    let mut heaps = HashMap::new();
    messages(f, header)?
        .into_iter()
        .map(|a| resolve(f, a?, &mut heaps))
        .collect()
}

/// The attribute `name` of the object at `header`.
pub(crate) fn read_one(f: &Store, header: Addr, path: &str, name: &str) -> Result<Attr> {
    let mut heaps = HashMap::new();
    for a in messages(f, header)? {
        match a {
            Ok(a) if a.name == name.as_bytes() => return resolve(f, a, &mut heaps),
            Ok(_) => {}
            // A damaged attribute may be the one asked for: say so rather than "not found".
            Err(e) => return Err(e),
        }
    }
    Err(Error::NoAttribute {
        object: path.to_owned(),
        name: name.to_owned(),
    })
}

/// The names of the attributes of the object at `header`, in stored order.
pub(crate) fn names(f: &Store, header: Addr) -> Result<Vec<String>> {
    messages(f, header)?
        .into_iter()
        .map(|a| a.map(|a| String::from_utf8_lossy(&a.name).into_owned()))
        .collect()
}

/// An attribute message as an [`Attr`], variable-length strings read from the global heap.
fn resolve(
    f: &Store,
    a: Attribute,
    heaps: &mut HashMap<Addr, GlobalHeapCollection>,
) -> Result<Attr> {
    let shape = match a.dataspace.kind {
        DataspaceKind::Null => None,
        DataspaceKind::Scalar => Some(Vec::new()),
        DataspaceKind::Simple => Some(a.dataspace.dims.clone()),
    };
    let strings = match &a.datatype.class {
        DatatypeClass::VarLen {
            kind: VarLenKind::String(t),
            ..
        } => Some(heap_strings(f, &a.data, *t, heaps)?),
        _ => None,
    };
    Ok(Attr {
        name: String::from_utf8_lossy(&a.name).into_owned(),
        shape,
        datatype: a.datatype,
        data: a.data,
        strings,
    })
}

/// Attributes a version 2 header keeps before they move to dense storage (libhdf5's default
/// `H5Pset_attr_phase_change` maximum).
const MAX_COMPACT_ATTRIBUTES: usize = 8;

/// Store attribute `name` (replacing one of that name) on the object at `header`: `shape`
/// `None` for a scalar of one value, else its dims.
pub(crate) fn write(
    f: &Store,
    header: Addr,
    path: &str,
    name: &str,
    shape: Option<&[u64]>,
    values: NewValues<'_>,
) -> Result<()> {
    f.check_writable()?;
    f.check_no_swmr("attribute")?;
    if name.is_empty() || name.contains('\0') {
        return Err(Error::arg(
            "name",
            "an attribute name is not empty and has no NUL",
        ));
    }
    let count = match values {
        NewValues::Numbers(d, ref le) => le.len().checked_div(d.size).unwrap_or(0),
        NewValues::Strings(s) => s.len(),
        NewValues::Raw(ref t, ref b) => b
            .len()
            .checked_div(usize::try_from(t.size).unwrap_or(0))
            .unwrap_or(0),
        NewValues::Sequences(_, ref items) => items.len(),
    };
    let elements = shape.map_or(Some(1u64), |s| {
        s.iter().try_fold(1u64, |a, &d| a.checked_mul(d))
    });
    if elements != u64::try_from(count).ok() {
        return Err(Error::arg(
            "values",
            format!("{count} values for the shape {shape:?} of attribute {name:?} of {path}"),
        ));
    }
    // The existing attributes: a damaged one is not replaced.
    let all = f.messages(header)?;
    let info = attr_info(f, header, &all)?;
    let dense = info.as_ref().and_then(AttrInfo::dense);
    for (_, a) in &attributes_in(f, header)? {
        a.as_ref()
            .map_err(|e| Error::corrupt("attribute", header, format!("{path}: {e}")))?;
    }
    let v1 = f.header_version(header)? == 1;
    let (datatype, data) = match values {
        NewValues::Numbers(desc, le) => (
            desc.to_datatype().ok_or(Error::Unsupported(
                "attributes of other types than numbers and strings",
            ))?,
            le,
        ),
        NewValues::Strings(strings) => {
            let data = string_ids(f, strings, false)?;
            let datatype = Datatype {
                version: h5chunk_format::message::DatatypeVersion::V1,
                size: u32::try_from(HeapId::encoded_len(f.sizes)).unwrap_or(16),
                class: DatatypeClass::VarLen {
                    kind: VarLenKind::String(StringType {
                        padding: StringPadding::NullTerminate,
                        charset: CharSet::Utf8,
                    }),
                    base: Box::new(Datatype::int(
                        1,
                        false,
                        h5chunk_format::message::ByteOrder::LittleEndian,
                    )),
                },
            };
            (datatype, data)
        }
        NewValues::Raw(datatype, data) => (datatype, data),
        NewValues::Sequences(base, items) => {
            let (objects, lens): (Vec<&[u8]>, Vec<u32>) = (items.iter())
                .filter(|(n, _)| *n > 0)
                .map(|(n, b)| (b.as_slice(), *n))
                .unzip();
            let mut stored = store_objects(f, &objects, &lens, false)?.into_iter();
            let mut data = Vec::new();
            for (n, _) in &items {
                let id = if *n > 0 {
                    stored
                        .next()
                        .ok_or(Error::Internal("a sequence without its heap object"))?
                } else {
                    HeapId {
                        len: 0,
                        collection: None,
                        index: 0,
                    }
                };
                id.encode(&mut data, f.sizes)?;
            }
            let datatype = Datatype {
                version: h5chunk_format::message::DatatypeVersion::V1,
                size: u32::try_from(HeapId::encoded_len(f.sizes)).unwrap_or(16),
                class: DatatypeClass::VarLen {
                    kind: VarLenKind::Sequence,
                    base: Box::new(base),
                },
            };
            (datatype, data)
        }
    };
    let dataspace = match shape {
        None => Dataspace {
            version: if v1 {
                DataspaceVersion::V1
            } else {
                DataspaceVersion::V2
            },
            kind: DataspaceKind::Scalar,
            dims: Vec::new(),
            max_dims: None,
        },
        Some(dims) => Dataspace {
            version: if v1 {
                DataspaceVersion::V1
            } else {
                DataspaceVersion::V2
            },
            kind: DataspaceKind::Simple,
            dims: dims.to_vec(),
            max_dims: Some(dims.iter().map(|&d| Extent::Fixed(d)).collect()),
        },
    };
    let attribute = Attribute::new(
        if v1 { 1 } else { 3 },
        name.as_bytes(),
        datatype,
        dataspace,
        data,
        f.sizes,
    );
    let mut raw = crate::object::raw(
        &Message::Attribute(attribute),
        MessageFlags::empty(),
        f.sizes,
    )?;
    // An attribute message is at most 64 KiB (its size field is 2 bytes): a larger one goes
    // to dense storage in a version 2 header, as libhdf5 moves it, and is refused in a
    // version 1 header, as libhdf5 refuses it; checked before anything changes (the
    // attribute it replaces is removed first).
    let too_large = raw.data.len() > crate::object::MAX_MESSAGE_LEN;
    if too_large && v1 {
        return Err(Error::Unsupported(
            "attributes over 64 KiB in version 1 object headers (the 1.8+ format stores them densely)",
        ));
    }
    // An object tracking attribute creation order (h5py's track_order) gives the attribute
    // the next creation index (a new one when it replaces another, as h5py's replacing does:
    // a new attribute, the old one deleted), and counts past it in its Attribute Info.
    let mut info = info;
    // libhdf5 counts the attributes of a version 2 header through its Attribute Info message
    // (none: zero attributes, whatever the header holds) and adds one with the first
    // attribute: tracking and indexing creation order as the header's flags say (h5py's
    // track_order objects get theirs so).
    let new_info = info.is_none() && !v1;
    if new_info {
        let (tracked, indexed) = f.header_attr_order(header)?;
        info = Some(AttrInfo {
            tracked,
            indexed: tracked && indexed,
            max_order: 0,
            heap: None,
            names: None,
            orders: None,
        });
    }
    let store_info = |info: &AttrInfo| {
        if new_info {
            f.add_message(
                header,
                h5chunk_format::object_header::RawMessage::new(
                    MessageType::ATTRIBUTE_INFO,
                    MessageFlags::empty(),
                    info.encode(f.sizes),
                ),
            )
        } else {
            put_attr_info(f, header, info)
        }
    };
    let order = match &mut info {
        Some(i) => i.take_order()?,
        None => None,
    };
    if let (Some((heap, names)), Some(info)) = (dense, &info) {
        let new = h5chunk_dense::write::NewAttribute {
            body: &raw.data,
            name: name.as_bytes(),
            order: order.map_or(0, u32::from),
        };
        let orders = info.orders.filter(|_| info.indexed);
        h5chunk_dense::write::put_attribute(f, &f.heaps, heap, names, orders, &new)?;
        if order.is_some() {
            put_attr_info(f, header, info)?;
        }
        return Ok(());
    }
    remove(f, header, name)?;
    // Past libhdf5's compact limit (8 attributes; a version 2 header with an Attribute Info
    // message), or with an attribute too large for a message, the attributes move to dense
    // storage, each with its creation order (the header's message creation order), indexed
    // by it when the object says so.
    let compact: Vec<(Attribute, u16)> = (f.raw_messages(header)?.into_iter())
        .filter(|m| m.kind == MessageType::ATTRIBUTE)
        .map(|m| {
            Ok((
                decode_attribute(f, &m.data, header)?,
                m.creation_order.unwrap_or(0),
            ))
        })
        .collect::<Result<_>>()?;
    if !v1
        && let Some(info) = &mut info
        && (compact.len() >= MAX_COMPACT_ATTRIBUTES || too_large)
    {
        let mut bodies = Vec::with_capacity(compact.len().saturating_add(1));
        for (a, order) in compact {
            let name = a.name.clone();
            let body = crate::object::raw(&Message::Attribute(a), MessageFlags::empty(), f.sizes)?;
            bodies.push((body.data, name, u32::from(order)));
        }
        bodies.push((
            raw.data,
            name.as_bytes().to_vec(),
            order.map_or(0, u32::from),
        ));
        let messages: Vec<h5chunk_dense::write::NewAttribute<'_>> = (bodies.iter())
            .map(|(body, name, order)| h5chunk_dense::write::NewAttribute {
                body,
                name,
                order: *order,
            })
            .collect();
        let made = h5chunk_dense::write::create_attributes(f, &f.heaps, &messages, info.indexed)?;
        while f.remove_message(header, |kind, _| kind == MessageType::ATTRIBUTE)? {}
        info.heap = Some(made.heap);
        info.names = Some(made.names);
        info.orders = made.orders;
        return store_info(info);
    }
    if let Some(info) = &info
        && (new_info || order.is_some())
    {
        store_info(info)?;
    }
    raw.creation_order = order;
    f.add_message(header, raw)
}

/// The object's Attribute Info message, if it has one.
fn attr_info(f: &Store, header: Addr, all: &[Message]) -> Result<Option<AttrInfo>> {
    for m in all {
        if let Message::Unknown { kind, data } = m
            && *kind == MessageType::ATTRIBUTE_INFO
        {
            return AttrInfo::decode(data, header, f.sizes).map(Some);
        }
    }
    Ok(None)
}

/// Write `info` over the object's Attribute Info message (same size: only the maximum
/// creation index and addresses change).
fn put_attr_info(f: &Store, header: Addr, info: &AttrInfo) -> Result<()> {
    f.replace_message(
        header,
        &Message::Unknown {
            kind: MessageType::ATTRIBUTE_INFO,
            data: info.encode(f.sizes),
        },
    )
}

/// Remove attribute `name` from the object at `header`; whether it was there.
pub(crate) fn remove(f: &Store, header: Addr, name: &str) -> Result<bool> {
    let info = attr_info(f, header, &f.messages(header)?)?;
    if let Some(info) = info
        && let Some((heap, names)) = info.dense()
    {
        let orders = info.orders.filter(|_| info.indexed);
        return Ok(h5chunk_dense::write::remove_attribute(
            f,
            heap,
            names,
            orders,
            name.as_bytes(),
        )?);
    }
    let sizes = f.sizes;
    f.remove_message(header, |kind, body| {
        kind == MessageType::ATTRIBUTE
            && h5chunk_format::message::Attribute::decode_name(
                &mut h5chunk_format::cursor::Decoder::new(body, header, sizes, "Attribute message"),
            )
            .is_ok_and(|n| n == name.as_bytes())
    })
}

/// [`remove`], an error when there is no such attribute.
pub(crate) fn delete(f: &Store, header: Addr, path: &str, name: &str) -> Result<()> {
    f.check_writable()?;
    if remove(f, header, name)? {
        Ok(())
    } else {
        Err(Error::NoAttribute {
            object: path.to_owned(),
            name: name.to_owned(),
        })
    }
}

/// The attributes of one group, dataset or file: h5py's `obj.attrs`, from
/// [`Group::attrs`](crate::Group::attrs), [`Dataset::attrs`](crate::Dataset::attrs) or
/// [`File::attrs`](crate::File::attrs) (the root group's).
///
/// ```
/// # fn main() -> h5chunk::Result<()> {
/// # let dir = std::env::temp_dir().join(format!("h5chunk-attrs-doc-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir).unwrap();
/// let file = h5chunk::File::create(dir.join("run.h5"))?;
/// file.attrs().set_str("title", "run 7")?; // h5py: f.attrs["title"] = "run 7"
/// let t = file.new_dataset::<f64>().shape(&[3]).chunk(&[3]).create("t")?;
/// t.attrs().set_str("units", "s")?;
/// t.attrs().set_scalar("scale", 0.5f64)?;
/// assert_eq!(t.attrs().names()?, ["scale", "units"]);
/// assert_eq!(t.attr("units")?.string()?, "s");
/// assert_eq!(file.attr("title")?.string()?, "run 7");
/// t.attrs().delete("scale")?;
/// assert!(!t.attrs().contains("scale")?);
/// # std::fs::remove_dir_all(&dir).unwrap();
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Attributes<'a> {
    store: &'a Store,
    /// The object's header; `None` for a file whose superblock names no root group.
    header: Option<Addr>,
    /// The object's path, for errors.
    path: String,
}

impl<'a> Attributes<'a> {
    pub(crate) fn new(store: &'a Store, header: Option<Addr>, path: String) -> Self {
        Attributes {
            store,
            header,
            path,
        }
    }

    fn header(&self) -> Result<Addr> {
        self.header
            .ok_or_else(|| Error::corrupt("superblock", Addr(0), "no root group address"))
    }

    /// The attribute `name` (h5py's `obj.attrs[name]`).
    pub fn get(&self, name: &str) -> Result<Attr> {
        read_one(self.store, self.header()?, &self.path, name)
    }

    /// Whether there is an attribute `name` (h5py's `name in obj.attrs`).
    pub fn contains(&self, name: &str) -> Result<bool> {
        Ok(self.names()?.iter().any(|n| n == name))
    }

    /// Every attribute, in the order h5py lists them (`obj.attrs.items()`): by creation order
    /// when the object tracks it, else by name.
    pub fn all(&self) -> Result<Vec<Attr>> {
        read_all(self.store, self.header()?)
    }

    /// The attributes' names, in the order h5py lists them (`obj.attrs.keys()`): by creation
    /// order when the object tracks it, else by name.
    pub fn names(&self) -> Result<Vec<String>> {
        names(self.store, self.header()?)
    }

    /// Set attribute `name` to `values`, a one-dimensional array (h5py's
    /// `obj.attrs[name] = np.array(values)`), replacing any attribute of that name.
    pub fn set<T: H5Type>(&self, name: &str, values: &[T]) -> Result<()> {
        let shape = [values.len() as u64];
        self.write(name, Some(&shape), crate::values::numbers(values))
    }

    /// Set attribute `name` to one number, a scalar (h5py's `obj.attrs[name] = 1.5`).
    pub fn set_scalar<T: H5Type>(&self, name: &str, value: T) -> Result<()> {
        self.write(name, None, crate::values::numbers(&[value]))
    }

    /// Set attribute `name` to a string, stored as h5py stores `obj.attrs[name] = 'K'`: a
    /// scalar variable-length UTF-8 string.
    pub fn set_str(&self, name: &str, value: &str) -> Result<()> {
        self.write(name, None, NewValues::Strings(&[value]))
    }

    /// Set attribute `name` to a one-dimensional array of strings (variable-length UTF-8).
    pub fn set_strs(&self, name: &str, values: &[&str]) -> Result<()> {
        let shape = [values.len() as u64];
        self.write(name, Some(&shape), NewValues::Strings(values))
    }

    /// Set attribute `name` to a boolean, stored as h5py stores `obj.attrs[name] = True`
    /// (a scalar of [`types::h5py_bool`](crate::types::h5py_bool)).
    pub fn set_bool(&self, name: &str, value: bool) -> Result<()> {
        let values = NewValues::Raw(crate::types::h5py_bool(), vec![u8::from(value)]);
        self.write(name, None, values)
    }

    /// Set attribute `name` to elements of any fixed-size `datatype` (compound records,
    /// enumerations, arrays, opaque, fixed-length strings, numbers of any byte order), given
    /// as stored: `bytes` holds the elements packed, `datatype.size` bytes each, in the type's
    /// own byte order. `shape` `None`: a scalar, one element. Variable-length types are
    /// refused, typed (use [`set_strs`](Self::set_strs) for strings).
    pub fn set_raw(
        &self,
        name: &str,
        shape: Option<&[u64]>,
        datatype: &Datatype,
        bytes: &[u8],
    ) -> Result<()> {
        crate::values::check_fixed_size(datatype)?;
        let values = NewValues::Raw(datatype.clone(), bytes.to_vec());
        self.write(name, shape, values)
    }

    /// Set attribute `name` to a one-dimensional array of object references to `targets`
    /// (objects' addresses, each checked to be an object of this file), as h5py stores
    /// `obj.attrs[name] = [g.ref, ...]` with `dtype=h5py.ref_dtype`.
    pub fn set_object_refs(&self, name: &str, targets: &[u64]) -> Result<()> {
        let bytes = crate::values::encode_refs(self.store, targets)?;
        let shape = [targets.len() as u64];
        let values = NewValues::Raw(crate::types::object_reference(), bytes);
        self.write(name, Some(&shape), values)
    }

    /// Delete attribute `name` (h5py's `del obj.attrs[name]`).
    pub fn delete(&self, name: &str) -> Result<()> {
        delete(self.store, self.header()?, &self.path, name)
    }

    pub(crate) fn write(
        &self,
        name: &str,
        shape: Option<&[u64]>,
        values: NewValues<'_>,
    ) -> Result<()> {
        write(self.store, self.header()?, &self.path, name, shape, values)
    }
}
