//! Groups: navigate by path, list members, create groups and datasets. The links themselves
//! (compact or symbol-table storage) are [`crate::link`]'s.

use h5chunk_format::Addr;

use crate::attr::{Attr, Attributes};
use crate::dataset::{Dataset, DatasetBuilder};
use crate::error::Result;
use crate::file::{File, group_flags, symbol_cache};
use crate::link::{self, At, LinkValue, MemberKind};
use crate::store::HeaderPad;
use crate::types::{Datatype, H5Type, TypeDesc};

/// How a new group is made ([`Group::create_group_with`], [`File::create_group_with`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct GroupOptions {
    /// Track and index the creation order of the group's links and attributes (h5py's
    /// `track_order=True`): h5py and [`Group::members_in_creation_order`] then list them in
    /// the order made, in compact and in dense storage. Needs the 1.8+ format (refused, typed,
    /// under the earliest library version bounds). Default: off, as in libhdf5.
    pub track_order: bool,
}

impl GroupOptions {
    /// Options with creation order tracked (and indexed) or not.
    pub fn track_order(on: bool) -> GroupOptions {
        GroupOptions { track_order: on }
    }
}

/// A group of an open file.
#[derive(Clone, Debug)]
pub struct Group {
    file: File,
    at: At,
}

impl Group {
    /// The group's path.
    pub fn path(&self) -> &str {
        &self.at.path
    }

    /// The file the group belongs to.
    pub fn file(&self) -> &File {
        &self.file
    }

    /// The address of the group's object header: what identifies the group itself, whatever
    /// path reached it (hard links may give one group several paths, and even make a group
    /// its own descendant; a walk of the tree uses this to visit each group once).
    pub fn object_address(&self) -> u64 {
        self.at.addr.get()
    }

    /// The group's attributes (h5py's `group.attrs`).
    pub fn attrs(&self) -> Attributes<'_> {
        Attributes::new(
            &self.file.inner.store,
            Some(self.at.addr),
            self.at.path.clone(),
        )
    }

    /// The attribute `name` (h5py's `group.attrs[name]`; `attrs().get(name)`).
    pub fn attr(&self, name: &str) -> Result<Attr> {
        self.attrs().get(name)
    }

    /// Every member: name and kind, sorted by name.
    pub fn members(&self) -> Result<Vec<(String, MemberKind)>> {
        self.members_ordered(false)
    }

    /// The members in the order they were created, when the group tracks it (netCDF-4 files
    /// do; h5py's `track_order=True`; h5py then iterates in this order), else by name.
    pub fn members_in_creation_order(&self) -> Result<Vec<(String, MemberKind)>> {
        self.members_ordered(true)
    }

    /// Whether the group tracks its members' creation order.
    pub fn tracks_creation_order(&self) -> Result<bool> {
        link::tracks_creation_order(&self.file.inner.store, self.at.addr)
    }

    fn members_ordered(&self, by_creation: bool) -> Result<Vec<(String, MemberKind)>> {
        let s = &self.file.inner.store;
        let mut out = Vec::new();
        let links = link::links_in_order(s, self.at.addr, by_creation)?;
        // Each member's kind is in its object header: ask for all of them at once, so a
        // storage for which each request is a round trip (an object store) fetches them
        // together rather than one after another. A failed prefetch is no error: the reads
        // below report what is wrong.
        let headers: Vec<(Addr, u64)> = links
            .iter()
            .filter_map(|(_, v)| match v {
                LinkValue::Hard(a) => Some((*a, crate::prefetch::HEADER_PREFETCH)),
                _ => None,
            })
            .collect();
        if headers.len() > 1 {
            let _ = s.storage.prefetch(&headers);
        }
        for (name, v) in links {
            let kind = match v {
                LinkValue::Hard(a) => link::kind_of(s, a)?,
                _ => MemberKind::Other,
            };
            out.push((name, kind));
        }
        Ok(out)
    }

    /// Fetch ahead the structures of every group under this one (object headers, B-tree
    /// nodes, local heaps, symbol table nodes, members' object headers), level by level,
    /// each level's in one batched, concurrent request set: for a file in an object store, a
    /// listing of the whole tree that follows costs a few requests a level rather than several
    /// a group. Does nothing for a local file. A structure that does not decode is skipped
    /// here and reported by the reads that follow.
    pub fn prefetch_tree(&self) {
        crate::prefetch::group_tree(&self.file.inner.store, self.at.addr);
    }

    /// Every link: name and target, sorted by name.
    pub fn links(&self) -> Result<Vec<(String, LinkValue)>> {
        link::links(&self.file.inner.store, self.at.addr)
    }

    /// The link `name` itself, not followed (h5py's `group.get(name, getlink=True)`): where a
    /// soft or external link points; `None` when there is no member of that name.
    pub fn link(&self, name: &str) -> Result<Option<LinkValue>> {
        link::lookup(&self.file.inner.store, self.at.addr, name)
    }

    /// Whether a member `name` exists (as a link; its target is not checked).
    pub fn contains(&self, name: &str) -> Result<bool> {
        Ok(link::lookup(&self.file.inner.store, self.at.addr, name)?.is_some())
    }

    /// The group at `path`, relative to this one (or absolute). Soft and external links on
    /// the way are followed; a group in another file comes with that file (its
    /// [`file`](Group::file)), opened as libhdf5 opens the target of an external link.
    pub fn group(&self, path: &str) -> Result<Group> {
        let (file, at) = self.reach(path, MemberKind::Group)?;
        Ok(Group { file, at })
    }

    /// The dataset at `path`, relative to this group (or absolute), following soft and
    /// external links (a dataset in another file belongs to that file).
    pub fn dataset(&self, path: &str) -> Result<Dataset> {
        // A path that names no member ("/", "", ".") is a bad argument, not a group.
        link::split_relative(path)?;
        let (file, at) = self.reach(path, MemberKind::Dataset)?;
        Dataset::open(&file, at.addr, at.path)
    }

    /// The object at `path` from this group, which must be a `kind`, and the file it is in
    /// (another one past an external link).
    fn reach(&self, path: &str, kind: MemberKind) -> Result<(crate::File, At)> {
        crate::extlink::reach(&self.file, &self.at, path, kind)
    }

    /// Create a group `name` in this group.
    pub fn create_group(&self, name: &str) -> Result<Group> {
        self.create_group_with(name, GroupOptions::default())
    }

    /// Create a group `name` in this group, as `options` say (h5py's
    /// `create_group(name, track_order=True)`).
    pub fn create_group_with(&self, name: &str, options: GroupOptions) -> Result<Group> {
        let s = &self.file.inner.store;
        s.check_writable()?;
        s.check_no_swmr("group")?;
        let track = options.track_order;
        let messages = link::new_group_messages(s, track)?;
        let pad = match (s.bounds.new_style(), track) {
            (true, true) => HeaderPad::TrackedGroup,
            (true, false) => HeaderPad::NewGroup,
            (false, _) => HeaderPad::OldGroup,
        };
        let addr = s.create_object(&group_flags(&messages), pad, track)?;
        link::add_link(
            s,
            self.at.addr,
            &self.at.path,
            name,
            addr,
            symbol_cache(&messages),
        )?;
        Ok(Group {
            file: self.file.clone(),
            at: At {
                addr,
                path: link::child_path(&self.at.path, name),
            },
        })
    }

    /// Add an external link `name` to the object at `object_path` in the file `file_name`
    /// (h5py's `group[name] = h5py.ExternalLink(file_name, object_path)`). Nothing is
    /// checked about the target, which need not exist yet; it is found when the link is
    /// followed (relative names from the linking file's folder, see [`Group::group`]). An
    /// old-style group (the earliest library version bounds, h5py's default) becomes a
    /// new-style group with the same links first, as libhdf5 makes it to hold an external
    /// link; h5py and `h5dump` read either.
    pub fn link_external(&self, name: &str, file_name: &str, object_path: &str) -> Result<()> {
        let s = &self.file.inner.store;
        s.check_writable()?;
        s.check_no_swmr("link")?;
        if file_name.is_empty() || file_name.contains('\0') {
            return Err(crate::Error::arg(
                "file_name",
                format!("{file_name:?} is not a file name (empty, or holding NUL)"),
            ));
        }
        if object_path.is_empty() || object_path.contains('\0') {
            return Err(crate::Error::arg(
                "object_path",
                format!("{object_path:?} is not an object path (empty, or holding NUL)"),
            ));
        }
        let l = h5chunk_format::message::Link::external(
            name.as_bytes(),
            file_name.as_bytes(),
            object_path.as_bytes(),
        );
        let converted = link::add_link_message(
            s,
            self.at.addr,
            &self.at.path,
            l,
            h5chunk_format::symbol_table_entry::Cache::Nothing,
        )?;
        if converted && self.at.addr == self.file.inner.root()? {
            self.file.inner.uncache_root_symbol_table()?;
        }
        Ok(())
    }

    /// Start building a dataset of `T` elements in this group (its `create` takes a path
    /// relative to this group).
    pub fn new_dataset<T: H5Type>(&self) -> DatasetBuilder {
        self.new_dataset_of(T::DESC)
    }

    /// Start building a dataset of a runtime-chosen element type in this group.
    pub fn new_dataset_of(&self, dtype: TypeDesc) -> DatasetBuilder {
        DatasetBuilder::new(self.file.clone(), dtype).in_group(self.at.clone())
    }

    /// Start building a dataset of elements of `datatype`, any fixed-size HDF5 type (see
    /// [`File::new_dataset_with_type`]).
    pub fn new_dataset_with_type(&self, datatype: Datatype) -> DatasetBuilder {
        DatasetBuilder::with_datatype(self.file.clone(), datatype).in_group(self.at.clone())
    }
}

impl File {
    /// The file's own attributes, those of its root group (h5py's `f.attrs`).
    pub fn attrs(&self) -> Attributes<'_> {
        Attributes::new(&self.inner.store, self.inner.root().ok(), "/".into())
    }

    /// The file's attribute `name` (h5py's `f.attrs[name]`; `attrs().get(name)`).
    pub fn attr(&self, name: &str) -> Result<Attr> {
        self.attrs().get(name)
    }

    /// The root group.
    pub fn root(&self) -> Result<Group> {
        Ok(Group {
            file: self.clone(),
            at: At {
                addr: self.inner.root()?,
                path: "/".into(),
            },
        })
    }

    /// The group at `path`.
    pub fn group(&self, path: &str) -> Result<Group> {
        self.root()?.group(path)
    }

    /// Add an external link at `path` (its parent group must exist) to `object_path` in the
    /// file `file_name` (h5py's `f[path] = h5py.ExternalLink(file_name, object_path)`; see
    /// [`Group::link_external`]).
    pub fn link_external(&self, path: &str, file_name: &str, object_path: &str) -> Result<()> {
        let (parent, name) = link::split_path(path)?;
        self.group(parent)?
            .link_external(name, file_name, object_path)
    }

    /// Create the group at `path` (its parent must exist).
    pub fn create_group(&self, path: &str) -> Result<Group> {
        self.create_group_with(path, GroupOptions::default())
    }

    /// Create the group at `path`, as `options` say (h5py's
    /// `create_group(path, track_order=True)`).
    pub fn create_group_with(&self, path: &str, options: GroupOptions) -> Result<Group> {
        let (parent, name) = link::split_path(path)?;
        self.group(parent)?.create_group_with(name, options)
    }

    /// The dataset at `path`.
    pub fn dataset(&self, path: &str) -> Result<Dataset> {
        self.root()?.dataset(path)
    }

    /// Start building a dataset of `T` elements.
    pub fn new_dataset<T: H5Type>(&self) -> DatasetBuilder {
        DatasetBuilder::new(self.clone(), T::DESC)
    }

    /// Start building a dataset of a runtime-chosen element type.
    pub fn new_dataset_of(&self, dtype: TypeDesc) -> DatasetBuilder {
        DatasetBuilder::new(self.clone(), dtype)
    }

    /// Start building a dataset of elements of `datatype`, any fixed-size HDF5 type: compound
    /// records, enumerations, arrays, fixed-length strings, opaque and bitfield elements (or
    /// numbers, stored as that message says). Elements are written and read as their stored
    /// bytes ([`Dataset::write_raw`](crate::Dataset::write_raw),
    /// [`Dataset::read_raw`](crate::Dataset::read_raw)); fixed-length strings also with
    /// [`Dataset::write_strings`](crate::Dataset::write_strings). Variable-length strings
    /// ([`types::vlen_utf8`](crate::types::vlen_utf8)) are written with `write_strings`,
    /// variable-length sequences of numbers
    /// ([`types::vlen_sequence`](crate::types::vlen_sequence)) with
    /// [`Dataset::write_sequences`](crate::Dataset::write_sequences); sequences of other base
    /// types are refused when the dataset is created.
    pub fn new_dataset_with_type(&self, datatype: Datatype) -> DatasetBuilder {
        DatasetBuilder::with_datatype(self.clone(), datatype)
    }
}
