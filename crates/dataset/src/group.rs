//! Groups: new-style (links in the object header, "compact" storage) and old-style (a symbol
//! table: local heap of names, group B-tree, symbol table nodes). Dense link storage (fractal
//! heap) is reported as unsupported.

use h5chunk_format::Addr;
use h5chunk_format::message::{GroupInfo, Link, LinkInfo, LinkTarget, Message, SymbolTable};
use h5chunk_format::symbol_table_entry::Cache;

use crate::error::{Error, Result};
use crate::file::FileInner;
use crate::object::raw;

/// What a link points to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LinkValue {
    /// An object in this file.
    Hard(Addr),
    /// A path in this file.
    Soft(String),
    /// An object in another file.
    External {
        /// The other file.
        file: String,
        /// The object's path there.
        path: String,
    },
}

/// How a group stores its links.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Storage {
    Compact,
    SymbolTable { btree: Addr, heap: Addr },
}

pub(crate) fn storage_of(f: &FileInner, group: Addr) -> Result<Storage> {
    let mut found = None;
    for m in f.messages(group)? {
        match m {
            Message::SymbolTable(st) => {
                return Ok(Storage::SymbolTable {
                    btree: st.btree_address,
                    heap: st.local_heap_address,
                });
            }
            Message::LinkInfo(li) => {
                if li.fractal_heap_address.is_some() {
                    return Err(Error::Unsupported("dense link storage (fractal heap)"));
                }
                found = Some(Storage::Compact);
            }
            _ => {}
        }
    }
    found.ok_or_else(|| Error::InvalidArgument(format!("object @ {group} is not a group")))
}

/// Every link of the group whose header is at `group`, sorted by name.
pub(crate) fn links(f: &FileInner, group: Addr) -> Result<Vec<(String, LinkValue)>> {
    let mut out = Vec::new();
    match storage_of(f, group)? {
        Storage::Compact => {
            for m in f.messages(group)? {
                if let Message::Link(l) = m {
                    let value = match l.target {
                        LinkTarget::Hard(a) => LinkValue::Hard(a),
                        LinkTarget::Soft(p) => {
                            LinkValue::Soft(String::from_utf8_lossy(&p).into_owned())
                        }
                        LinkTarget::External { file, path, .. } => LinkValue::External {
                            file: String::from_utf8_lossy(&file).into_owned(),
                            path: String::from_utf8_lossy(&path).into_owned(),
                        },
                        LinkTarget::UserDefined { .. } => continue,
                    };
                    out.push((String::from_utf8_lossy(&l.name).into_owned(), value));
                }
            }
        }
        Storage::SymbolTable { btree, heap } => {
            let g = symbol_table(f, btree, heap)?;
            let names = g.names().map_err(bt1_err)?;
            for link in g.links().map_err(bt1_err)? {
                let e = link.entry;
                let value = match (e.cache(), e.object_header) {
                    (Cache::SoftLink { link_value_offset }, _) => LinkValue::Soft(
                        String::from_utf8_lossy(names.name(u64::from(link_value_offset))?)
                            .into_owned(),
                    ),
                    (_, Some(a)) => LinkValue::Hard(a),
                    (_, None) => continue,
                };
                out.push((String::from_utf8_lossy(&link.name).into_owned(), value));
            }
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

fn bt1_err(e: h5chunk_btree1::Error) -> Error {
    Error::Index {
        kind: "old-style group",
        source: Box::new(e),
    }
}

/// The old-style group (h5chunk-btree1) whose symbol table is `btree` + `heap`: its nodes and
/// heap live in the metadata cache, written at flush before the object headers.
fn symbol_table(f: &FileInner, btree: Addr, heap: Addr) -> Result<h5chunk_btree1::Group<'_>> {
    h5chunk_btree1::Group::open(
        &f.cache,
        f.sizes,
        f.group_internal_k,
        f.group_leaf_k,
        btree,
        heap,
    )
    .map_err(bt1_err)
}

/// The messages of a new group's object header.
pub(crate) fn new_group_messages(f: &FileInner) -> Result<Vec<Message>> {
    if f.bounds.new_style() {
        return Ok(vec![
            Message::LinkInfo(LinkInfo {
                max_creation_index: None,
                fractal_heap_address: None,
                name_index_address: None,
                creation_order_indexed: false,
                creation_order_index_address: None,
            }),
            Message::GroupInfo(GroupInfo {
                link_phase_change: None,
                estimates: None,
            }),
        ]);
    }
    // An old-style group: an empty local heap (the empty name at offset 0) and an empty group
    // B-tree leaf.
    f.check_writable()?;
    let g = h5chunk_btree1::Group::create(
        &f.cache,
        f.sizes,
        f.group_internal_k,
        f.group_leaf_k,
        h5chunk_btree1::DEFAULT_HEAP_SIZE,
    )
    .map_err(bt1_err)?;
    Ok(vec![Message::SymbolTable(SymbolTable {
        btree_address: g.btree_address(),
        local_heap_address: g.heap_address(),
    })])
}

/// Add a hard link `name` → `target` to the group whose header is at `group`. `cache` is the
/// cache entry type for old-style groups (a group member caches its symbol table).
pub(crate) fn add_link(
    f: &FileInner,
    group: Addr,
    name: &str,
    target: Addr,
    cache: Cache,
) -> Result<()> {
    if name.is_empty() || name.contains('/') || name.contains('\0') {
        return Err(Error::InvalidArgument(format!(
            "invalid link name {name:?}"
        )));
    }
    if links(f, group)?.iter().any(|(n, _)| n == name) {
        return Err(Error::InvalidArgument(format!(
            "a link named {name:?} exists already"
        )));
    }
    match storage_of(f, group)? {
        Storage::Compact => {
            let m = raw(
                &Message::Link(Link::hard(name.as_bytes(), target)),
                0,
                f.sizes,
            )?;
            f.add_message(group, m)
        }
        Storage::SymbolTable { btree, heap } => symbol_table(f, btree, heap)?
            .insert(name.as_bytes(), target, cache)
            .map_err(bt1_err),
    }
}
