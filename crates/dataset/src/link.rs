//! Link storage of groups: new-style (links in the object header, "compact" storage, or in a
//! fractal heap indexed by a v2 B-tree, "dense" storage: `crate::dense` reads it,
//! `h5chunk_dense::write` moves a group there past its compact limit and appends to it) and
//! old-style (a symbol table: local heap of names, group B-tree, symbol table nodes).
//! [`crate::Group`] is built on this.

use h5chunk_format::Addr;
use h5chunk_format::message::{GroupInfo, Link, LinkInfo, LinkTarget, Message, SymbolTable};
use h5chunk_format::symbol_table_entry::Cache;

use h5chunk_format::object_header::MessageFlags;

use crate::error::{Error, Result};
use crate::object::raw;
use crate::store::Store;

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
pub(crate) enum LinkStorage {
    Compact,
    SymbolTable {
        btree: Addr,
        heap: Addr,
    },
    /// A fractal heap of link messages and the v2 B-tree of their names' hashes.
    Dense {
        heap: Addr,
        names: Addr,
    },
}

pub(crate) fn storage_of(f: &Store, group: Addr) -> Result<LinkStorage> {
    let mut found = None;
    for m in f.messages(group)? {
        match m {
            Message::SymbolTable(st) => {
                return Ok(LinkStorage::SymbolTable {
                    btree: st.btree_address,
                    heap: st.local_heap_address,
                });
            }
            Message::LinkInfo(li) => {
                found = Some(match (li.fractal_heap_address, li.name_index_address) {
                    (Some(heap), Some(names)) => LinkStorage::Dense { heap, names },
                    (Some(_), None) => {
                        return Err(Error::corrupt(
                            "link info message",
                            Some(group),
                            "a fractal heap of links but no name index",
                        ));
                    }
                    _ => LinkStorage::Compact,
                });
            }
            _ => {}
        }
    }
    found.ok_or_else(|| Error::WrongKind {
        path: format!("object @ {group}"),
        expected: "group",
    })
}

/// What a compact link message points to (`None` for user-defined links, which h5chunk does
/// not follow).
fn compact_value(target: LinkTarget) -> Option<LinkValue> {
    Some(match target {
        LinkTarget::Hard(a) => LinkValue::Hard(a),
        LinkTarget::Soft(p) => LinkValue::Soft(String::from_utf8_lossy(&p).into_owned()),
        LinkTarget::External { file, path, .. } => LinkValue::External {
            file: String::from_utf8_lossy(&file).into_owned(),
            path: String::from_utf8_lossy(&path).into_owned(),
        },
        LinkTarget::UserDefined { .. } => return None,
    })
}

/// What a symbol table entry points to: a soft link's value is in the group's local heap.
fn entry_value(
    entry: &h5chunk_format::symbol_table_entry::SymbolTableEntry,
    heap: &h5chunk_format::local_heap::LocalHeapData,
) -> Result<Option<LinkValue>> {
    Ok(match (entry.cache(), entry.object_header) {
        (Cache::SoftLink { link_value_offset }, _) => Some(LinkValue::Soft(
            String::from_utf8_lossy(heap.name(u64::from(link_value_offset))?).into_owned(),
        )),
        (_, Some(a)) => Some(LinkValue::Hard(a)),
        (_, None) => None,
    })
}

/// Every link of the group whose header is at `group`, sorted by name.
pub(crate) fn links(f: &Store, group: Addr) -> Result<Vec<(String, LinkValue)>> {
    links_in_order(f, group, false)
}

/// Every link of the group, in creation order when `by_creation` and the links carry one
/// (groups that track it: netCDF-4 files, h5py's `track_order=True`), else by name.
pub(crate) fn links_in_order(
    f: &Store,
    group: Addr,
    by_creation: bool,
) -> Result<Vec<(String, LinkValue)>> {
    let mut out = Vec::new();
    let mut order: Vec<Option<u64>> = Vec::new();
    match storage_of(f, group)? {
        LinkStorage::Compact => {
            for m in f.messages(group)? {
                if let Message::Link(l) = m
                    && let Some(value) = compact_value(l.target)
                {
                    out.push((String::from_utf8_lossy(&l.name).into_owned(), value));
                    order.push(l.creation_order);
                }
            }
        }
        LinkStorage::SymbolTable { btree, heap } => {
            let g = symbol_table(f, btree, heap)?;
            let names = g.names(&f.cache).map_err(bt1_err)?;
            for link in g.to_vec(&f.cache).map_err(bt1_err)? {
                if let Some(value) = entry_value(&link.entry, &names)? {
                    out.push((String::from_utf8_lossy(&link.name).into_owned(), value));
                }
            }
        }
        LinkStorage::Dense { heap, names } => {
            for l in h5chunk_dense::links(f, heap, names)? {
                let crt = l.creation_order;
                if let Some(value) = compact_value(l.target) {
                    out.push((String::from_utf8_lossy(&l.name).into_owned(), value));
                    order.push(crt);
                }
            }
        }
    }
    if by_creation && !order.is_empty() && order.iter().all(Option::is_some) {
        let mut keyed: Vec<(Option<u64>, (String, LinkValue))> =
            order.into_iter().zip(out).collect();
        // Ties (a damaged file) fall back to the name.
        keyed.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.0.cmp(&b.1.0)));
        return Ok(keyed.into_iter().map(|(_, l)| l).collect());
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// Whether the group at `group` tracks its links' creation order (its Link Info message
/// says so).
pub(crate) fn tracks_creation_order(f: &Store, group: Addr) -> Result<bool> {
    Ok(f.messages(group)?
        .iter()
        .any(|m| matches!(m, Message::LinkInfo(li) if li.max_creation_index.is_some())))
}

/// The link `name` of the group whose header is at `group`, found without listing the others:
/// a scan of the header's link messages, or one descent of the group B-tree.
pub(crate) fn lookup(f: &Store, group: Addr, name: &str) -> Result<Option<LinkValue>> {
    match storage_of(f, group)? {
        LinkStorage::Compact => {
            for m in f.messages(group)? {
                if let Message::Link(l) = m
                    && l.name == name.as_bytes()
                {
                    return Ok(compact_value(l.target));
                }
            }
            Ok(None)
        }
        LinkStorage::SymbolTable { btree, heap } => {
            let g = symbol_table(f, btree, heap)?;
            match g.get(&f.cache, name.as_bytes()).map_err(bt1_err)? {
                Some(entry) => entry_value(&entry, &g.names(&f.cache).map_err(bt1_err)?),
                None => Ok(None),
            }
        }
        LinkStorage::Dense { heap, names } => {
            Ok(h5chunk_dense::lookup(f, heap, names, name)?.and_then(|l| compact_value(l.target)))
        }
    }
}

fn bt1_err(e: h5chunk_btree1::Error) -> Error {
    Error::SymbolTable(e)
}

/// The old-style group (h5chunk-btree1) whose symbol table is `btree` + `heap`: its nodes and
/// heap live in the metadata cache, written at flush before the object headers.
fn symbol_table(f: &Store, btree: Addr, heap: Addr) -> Result<h5chunk_btree1::Group> {
    h5chunk_btree1::Group::open(
        &f.cache,
        btree,
        heap,
        f.sizes,
        f.k.group_internal,
        f.k.group_leaf,
    )
    .map_err(bt1_err)
}

/// The messages of a new group's object header; `track_order`: its links' creation order is
/// tracked and indexed (h5py's `track_order=True`, libhdf5's `H5Pset_link_creation_order`),
/// which needs the 1.8+ format.
pub(crate) fn new_group_messages(f: &Store, track_order: bool) -> Result<Vec<Message>> {
    if f.bounds.new_style() {
        return Ok(vec![
            Message::LinkInfo(LinkInfo {
                max_creation_index: track_order.then_some(0),
                fractal_heap_address: None,
                name_index_address: None,
                creation_order_indexed: track_order,
                creation_order_index_address: None,
            }),
            Message::GroupInfo(GroupInfo {
                link_phase_change: None,
                estimates: None,
            }),
        ]);
    }
    if track_order {
        return Err(Error::Unsupported(
            "creation-order tracking in old-style groups (library version bounds before 1.8)",
        ));
    }
    // An old-style group: an empty local heap (the empty name at offset 0) and an empty group
    // B-tree leaf.
    f.check_writable()?;
    let g = h5chunk_btree1::Group::create(
        &f.cache,
        f.sizes,
        f.k.group_internal,
        f.k.group_leaf,
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
    f: &Store,
    group: Addr,
    group_path: &str,
    name: &str,
    target: Addr,
    cache: Cache,
) -> Result<()> {
    add_link_message(
        f,
        group,
        group_path,
        Link::hard(name.as_bytes(), target),
        cache,
    )
    .map(|_| ())
}

/// Add `link` to the group whose header is at `group`; `cache` is the symbol table entry's
/// cache type when the link is hard and the group old-style. An old-style group holds hard and
/// soft links only: any other link turns it into a new-style group first (its links become
/// link messages, compact or dense, as libhdf5 converts a group to add an external link to
/// it); whether that happened (the root's entry in the superblock then caches nothing).
pub(crate) fn add_link_message(
    f: &Store,
    group: Addr,
    group_path: &str,
    link: Link,
    cache: Cache,
) -> Result<bool> {
    let name = std::str::from_utf8(&link.name)
        .map_err(|_| Error::arg("name", "a link name is UTF-8"))?
        .to_owned();
    let name = name.as_str();
    if name.is_empty() || name.contains('/') || name.contains('\0') {
        return Err(Error::arg(
            "name",
            format!("{name:?} is not a link name (empty, or holding '/' or NUL)"),
        ));
    }
    if lookup(f, group, name)?.is_some() {
        return Err(Error::Exists {
            group: group_path.to_owned(),
            name: name.to_owned(),
        });
    }
    let mut converted = false;
    let mut storage = storage_of(f, group)?;
    if let (LinkStorage::SymbolTable { btree, heap }, LinkTarget::Hard(target)) =
        (storage, &link.target)
    {
        return symbol_table(f, btree, heap)?
            .insert(&f.cache, name.as_bytes(), *target, cache)
            .map_err(bt1_err)
            .map(|()| false);
    }
    if let LinkStorage::SymbolTable { .. } = storage {
        to_new_style(f, group)?;
        converted = true;
        storage = storage_of(f, group)?;
    }
    add_new_style(f, group, storage, link).map(|()| converted)
}

/// Add `link` to the new-style group at `group` whose links are stored as `storage` says.
fn add_new_style(f: &Store, group: Addr, storage: LinkStorage, link: Link) -> Result<()> {
    match storage {
        LinkStorage::Compact => {
            // Past the Group Info message's compact limit (libhdf5's 8 by default) the links
            // move to dense storage, as libhdf5 moves them.
            let (mut links, mut info, mut max_compact) = (Vec::new(), None, 8usize);
            for m in f.messages(group)? {
                match m {
                    Message::Link(l) => links.push(l),
                    Message::LinkInfo(li) => info = Some(li),
                    Message::GroupInfo(gi) => {
                        if let Some(p) = gi.link_phase_change {
                            max_compact = usize::from(p.max_compact);
                        }
                    }
                    _ => {}
                }
            }
            // A group that tracks creation order gives each link the next index (libhdf5's
            // maximum creation index counts the links ever made). Past the compact limit its
            // links move to dense storage with, when the group indexes creation order, a
            // creation-order index (v2 B-tree type 6) beside the name index.
            if let Some(li) = &info
                && let Some(next) = li.max_creation_index
            {
                let mut link = link;
                link.creation_order = Some(next);
                if links.len() >= max_compact {
                    links.push(link);
                    let made = h5chunk_dense::write::create(
                        f,
                        &f.heaps,
                        &links,
                        li.creation_order_indexed,
                    )?;
                    while f.remove_message(group, |kind, _| {
                        kind == h5chunk_format::message::MessageType::LINK
                    })? {}
                    return f.replace_message(
                        group,
                        &Message::LinkInfo(LinkInfo {
                            max_creation_index: Some(next.saturating_add(1)),
                            fractal_heap_address: Some(made.heap),
                            name_index_address: Some(made.names),
                            creation_order_index_address: made.orders,
                            ..*li
                        }),
                    );
                }
                let m = raw(&Message::Link(link), MessageFlags::empty(), f.sizes)?;
                // The link first: if the header refuses it, nothing has changed.
                f.add_message(group, m)?;
                return f.replace_message(
                    group,
                    &Message::LinkInfo(LinkInfo {
                        max_creation_index: Some(next.saturating_add(1)),
                        ..*li
                    }),
                );
            }
            match info {
                Some(li) if links.len() >= max_compact && li.max_creation_index.is_none() => {
                    links.push(link);
                    let made = h5chunk_dense::write::create(f, &f.heaps, &links, false)?;
                    while f.remove_message(group, |kind, _| {
                        kind == h5chunk_format::message::MessageType::LINK
                    })? {}
                    f.replace_message(
                        group,
                        &Message::LinkInfo(LinkInfo {
                            fractal_heap_address: Some(made.heap),
                            name_index_address: Some(made.names),
                            ..li
                        }),
                    )
                }
                _ => {
                    let m = raw(&Message::Link(link), MessageFlags::empty(), f.sizes)?;
                    f.add_message(group, m)
                }
            }
        }
        LinkStorage::SymbolTable { .. } => Err(Error::Internal(
            "a link message added to an old-style group",
        )),
        LinkStorage::Dense { heap, names } => {
            let info = f.messages(group)?.into_iter().find_map(|m| match m {
                Message::LinkInfo(li) => Some(li),
                _ => None,
            });
            let Some(li) = info.filter(|li| li.max_creation_index.is_some()) else {
                return Ok(h5chunk_dense::write::add(
                    f, &f.heaps, heap, names, None, &link,
                )?);
            };
            // A group that tracks creation order gives the link the next index, and one that
            // indexes it adds a record to its creation-order B-tree (type 6), as libhdf5
            // does; the maximum index goes up once the link is in.
            let next = li.max_creation_index.unwrap_or(0);
            let orders = match (li.creation_order_indexed, li.creation_order_index_address) {
                (true, Some(at)) => Some(at),
                (true, None) => {
                    return Err(Error::corrupt(
                        "link info message",
                        group,
                        "creation order indexed, without an index",
                    ));
                }
                (false, _) => None,
            };
            let mut link = link;
            link.creation_order = Some(next);
            h5chunk_dense::write::add(f, &f.heaps, heap, names, orders, &link)?;
            f.replace_message(
                group,
                &Message::LinkInfo(LinkInfo {
                    max_creation_index: Some(next.saturating_add(1)),
                    ..li
                }),
            )
        }
    }
}

/// Turn the old-style group at `group` into a new-style one with the same links: its Symbol
/// Table message gives way to a Link Info and a Group Info message and one link message per
/// link (in dense storage past libhdf5's compact limit of 8), as libhdf5 converts a group
/// when a link an old-style group cannot hold (an external link) is added to it. The old
/// B-tree and local heap are left unreferenced (their space is not reused, as libhdf5 does
/// not reuse freed space after the file closes).
fn to_new_style(f: &Store, group: Addr) -> Result<()> {
    f.check_writable()?;
    let links: Vec<Link> = links(f, group)?
        .into_iter()
        .map(|(name, value)| match value {
            LinkValue::Hard(a) => Link::hard(name.as_bytes(), a),
            LinkValue::Soft(p) => Link::soft(name.as_bytes(), p.as_bytes()),
            LinkValue::External { file, path } => {
                Link::external(name.as_bytes(), file.as_bytes(), path.as_bytes())
            }
        })
        .collect();
    let dense = if links.len() > 8 {
        Some(h5chunk_dense::write::create(f, &f.heaps, &links, false)?)
    } else {
        None
    };
    while f.remove_message(group, |kind, _| {
        kind == h5chunk_format::message::MessageType::SYMBOL_TABLE
    })? {}
    let info = LinkInfo {
        max_creation_index: None,
        fractal_heap_address: dense.as_ref().map(|d| d.heap),
        name_index_address: dense.as_ref().map(|d| d.names),
        creation_order_indexed: false,
        creation_order_index_address: None,
    };
    f.add_message(
        group,
        raw(&Message::LinkInfo(info), MessageFlags::empty(), f.sizes)?,
    )?;
    f.add_message(
        group,
        raw(
            &Message::GroupInfo(GroupInfo {
                link_phase_change: None,
                estimates: None,
            }),
            MessageFlags::CONSTANT,
            f.sizes,
        )?,
    )?;
    if dense.is_none() {
        for l in links {
            f.add_message(
                group,
                raw(&Message::Link(l), MessageFlags::empty(), f.sizes)?,
            )?;
        }
    }
    Ok(())
}

/// Soft and external links followed while resolving one path before giving up (libhdf5's
/// default limit, `H5L_NUM_LINKS`, which counts both): a link that points to itself, or two
/// files whose external links point at each other, is an error, not a stack overflow or a hang.
pub(crate) const MAX_LINK_HOPS: u32 = 16;

/// What a group member is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemberKind {
    /// A group.
    Group,
    /// A dataset.
    Dataset,
    /// A soft or external link, or an object of another kind.
    Other,
}

impl MemberKind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            MemberKind::Group => "group",
            MemberKind::Dataset => "dataset",
            MemberKind::Other => "object",
        }
    }
}

/// The kind of the object whose header is at `addr`.
pub(crate) fn kind_of(f: &Store, addr: Addr) -> Result<MemberKind> {
    Ok(kind_from(&f.messages(addr)?))
}

/// An object's kind from its header's messages, as libhdf5 classifies objects: a group holds a
/// symbol table or link info message; a dataset a layout message, or a datatype and a
/// dataspace (libhdf5's test: such an object without a layout is a damaged dataset, not some
/// other object).
pub(crate) fn kind_from(messages: &[Message]) -> MemberKind {
    let has = |pick: fn(&Message) -> bool| messages.iter().any(pick);
    if has(|m| matches!(m, Message::SymbolTable(_) | Message::LinkInfo(_))) {
        MemberKind::Group
    } else if has(|m| matches!(m, Message::DataLayout(_)))
        || (has(|m| matches!(m, Message::Datatype(_)))
            && has(|m| matches!(m, Message::Dataspace(_))))
    {
        MemberKind::Dataset
    } else {
        MemberKind::Other
    }
}

/// The path of member `name` of the group at `parent`.
pub(crate) fn child_path(parent: &str, name: &str) -> String {
    if parent == "/" {
        format!("/{name}")
    } else {
        format!("{parent}/{name}")
    }
}

/// `("/a/b", "c")` from `"/a/b/c"`; a name alone is in the root group.
pub(crate) fn split_path(path: &str) -> Result<(&str, &str)> {
    let trimmed = path.trim_end_matches('/');
    match trimmed.rsplit_once('/') {
        Some((parent, name)) if !name.is_empty() => {
            Ok((if parent.is_empty() { "/" } else { parent }, name))
        }
        None if !trimmed.is_empty() => Ok(("/", trimmed)),
        _ => Err(Error::arg(
            "path",
            format!("{path:?} names no member of a group"),
        )),
    }
}

/// `("a/b", "c")` from `"a/b/c"`, `(".", "c")` from `"c"` and `("/", "c")` from `"/c"`: the
/// group a path's last member is in (relative paths stay relative) and that member's name.
pub(crate) fn split_relative(path: &str) -> Result<(&str, &str)> {
    let trimmed = path.trim_end_matches('/');
    let (parent, name) = match trimmed.rsplit_once('/') {
        Some((p, n)) => (if p.is_empty() { "/" } else { p }, n),
        None => (".", trimmed),
    };
    if name.is_empty() || name == "." {
        return Err(Error::arg(
            "path",
            format!("{path:?} names no member of a group"),
        ));
    }
    Ok((parent, name))
}

/// A group's header address and path: where a path is resolved from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct At {
    pub addr: Addr,
    pub path: String,
}

/// Resolves paths from a file's root group.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Resolver<'s> {
    pub store: &'s Store,
    pub root: Addr,
}

impl Resolver<'_> {
    fn root_at(&self) -> At {
        At {
            addr: self.root,
            path: "/".into(),
        }
    }

    /// The object at `path` relative to `from` (or absolute), following soft links; every
    /// member on the way but the last must be a group. An external link on the way stops the
    /// walk: [`Reached::External`] says where it points and what of the path remains.
    /// `hops` counts the soft and external links followed (up to [`MAX_LINK_HOPS`]).
    pub fn walk(&self, from: &At, path: &str, hops: &mut u32) -> Result<Reached> {
        let mut g = if path.starts_with('/') {
            self.root_at()
        } else {
            from.clone()
        };
        let names: Vec<&str> = path
            .split('/')
            .filter(|n| !n.is_empty() && *n != ".")
            .collect();
        let mut rest = names.iter();
        while let Some(name) = rest.next() {
            if kind_of(self.store, g.addr)? != MemberKind::Group {
                return Err(Error::WrongKind {
                    path: g.path,
                    expected: MemberKind::Group.name(),
                });
            }
            match self.child_hops(&g, name, hops)? {
                Reached::Here(at) => g = at,
                Reached::External {
                    link,
                    file,
                    path,
                    rest: more,
                } => {
                    let mut tail: Vec<&str> = more.split('/').filter(|n| !n.is_empty()).collect();
                    tail.extend(rest.copied());
                    return Ok(Reached::External {
                        link,
                        file,
                        path,
                        rest: tail.join("/"),
                    });
                }
            }
        }
        Ok(Reached::Here(g))
    }

    /// Member `name` of group `g`, following soft links.
    fn child_hops(&self, g: &At, name: &str, hops: &mut u32) -> Result<Reached> {
        let here = child_path(&g.path, name);
        match lookup(self.store, g.addr, name)? {
            Some(LinkValue::Hard(addr)) => Ok(Reached::Here(At { addr, path: here })),
            Some(LinkValue::Soft(p)) => {
                count_hop(hops, &self.store.name, &here)?;
                let p = if p.starts_with('/') {
                    p
                } else {
                    child_path(&g.path, &p)
                };
                self.walk(g, &p, hops)
            }
            Some(LinkValue::External { file, path }) => {
                count_hop(hops, &self.store.name, &here)?;
                Ok(Reached::External {
                    link: here,
                    file,
                    path,
                    rest: String::new(),
                })
            }
            None => Err(Error::NotFound {
                group: g.path.clone(),
                name: name.to_owned(),
            }),
        }
    }

    /// The group at `path`, relative to `from` (or absolute), in this file: an external link
    /// on the way is refused (what reaches other files is `crate::Group`'s).
    pub fn group(&self, from: &At, path: &str) -> Result<At> {
        match self.walk(from, path, &mut 0)? {
            Reached::Here(at) => {
                if kind_of(self.store, at.addr)? != MemberKind::Group {
                    return Err(Error::WrongKind {
                        path: at.path,
                        expected: MemberKind::Group.name(),
                    });
                }
                Ok(at)
            }
            Reached::External { .. } => Err(Error::Unsupported(
                "creating objects in another file through an external link",
            )),
        }
    }
}

/// One more soft or external link followed on the way to `link` in file `file`: past
/// [`MAX_LINK_HOPS`], an error naming the link.
fn count_hop(hops: &mut u32, file: &str, link: &str) -> Result<()> {
    *hops = hops.saturating_add(1);
    if *hops > MAX_LINK_HOPS {
        return Err(Error::LinkDepth {
            file: file.to_owned(),
            link: link.to_owned(),
            limit: MAX_LINK_HOPS,
        });
    }
    Ok(())
}

/// Where a path led.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Reached {
    /// An object of this file.
    Here(At),
    /// An external link: its path here, the file and path it names, and what remains of the
    /// path being resolved beyond it (relative to its target).
    External {
        link: String,
        file: String,
        path: String,
        rest: String,
    },
}

#[cfg(test)]
mod tests {
    use super::{split_path, split_relative};

    #[test]
    fn paths() {
        assert_eq!(split_path("/a/b/c").unwrap(), ("/a/b", "c"));
        assert_eq!(split_path("/c").unwrap(), ("/", "c"));
        assert_eq!(split_path("c").unwrap(), ("/", "c"));
        assert!(split_path("/").is_err());
        assert_eq!(split_relative("a/b/c").unwrap(), ("a/b", "c"));
        assert_eq!(split_relative("c").unwrap(), (".", "c"));
        assert_eq!(split_relative("/c/").unwrap(), ("/", "c"));
        assert!(split_relative("/").is_err());
        assert!(split_relative("").is_err());
    }
}
