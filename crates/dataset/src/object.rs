//! Object headers of an open file: read on demand, modified in place, written at flush.
//!
//! Headers are written after the metadata cache has written every chunk-index block (a header
//! holds the layout message that points to the index) and before the superblock (after it for
//! a SWMR writer, whose superblock must cover the space the headers point to first: see
//! `docs/design/swmr.md`), so a reader never follows a pointer into bytes not yet written.

use std::collections::{BTreeSet, HashMap};

use h5chunk_cache::{MetadataCache, Storage};
use h5chunk_format::message::{Continuation, Message, MessageType, SharedMessage};
use h5chunk_format::object_header::{Chunk, MessageFlags, ObjectHeader, Prefix, RawMessage, v2};
use h5chunk_format::{Addr, Error as FormatError, Sizes};

use crate::error::{Error, Result};

/// Bytes of message area a new continuation chunk gets, so later messages fit without another.
const CONTINUATION_CHUNK: usize = 256;

/// The object headers h5chunk has read or changed.
#[derive(Debug, Default)]
pub(crate) struct Headers {
    map: HashMap<Addr, ObjectHeader>,
    dirty: BTreeSet<Addr>,
    /// Headers staged in the metadata cache and not yet written (kept in memory).
    staged: BTreeSet<Addr>,
    /// The length chunk 0 of a header had when last read (a SWMR reader reads its datasets'
    /// headers again at every refresh: one read of exactly those bytes, not a speculative
    /// 512).
    chunk0_len: HashMap<Addr, u64>,
}

/// Add the message `m` decoded to `out`: an attribute that does not decode is kept as its
/// bytes (it is listed, and refused only when read); any other message that does not decode
/// is the header's error.
fn keep_decoded(
    out: &mut Vec<Message>,
    m: &RawMessage,
    decoded: std::result::Result<Message, FormatError>,
) -> Result<()> {
    match decoded {
        Ok(msg) => out.push(msg),
        Err(_) if m.kind == h5chunk_format::message::MessageType::ATTRIBUTE => {
            out.push(Message::Unknown {
                kind: m.kind,
                data: m.data.to_vec(),
            });
        }
        Err(e) => return Err(e.into()),
    }
    Ok(())
}

/// Encode a typed message into a raw one with message flags `flags`.
pub(crate) fn raw(m: &Message, flags: MessageFlags, sizes: Sizes) -> Result<RawMessage> {
    let mut data = Vec::new();
    m.encode(sizes, &mut data)?;
    Ok(RawMessage::new(m.kind(), flags, data))
}

impl Headers {
    /// The header at `at`, read through `storage` the first time.
    pub fn get(
        &mut self,
        storage: &dyn Storage,
        sizes: Sizes,
        at: Addr,
    ) -> Result<&mut ObjectHeader> {
        match self.map.entry(at) {
            std::collections::hash_map::Entry::Occupied(e) => Ok(e.into_mut()),
            std::collections::hash_map::Entry::Vacant(v) => {
                let len = storage.len().map_err(h5chunk_cache::Error::from)?;
                let first = self
                    .chunk0_len
                    .get(&at)
                    .copied()
                    .unwrap_or(h5chunk_format::object_header::SPECULATIVE_READ_LEN);
                let mut seen_len = None;
                let h = ObjectHeader::read_hinted(
                    at,
                    sizes,
                    first,
                    |a, n| -> std::result::Result<Vec<u8>, Error> {
                        let end = a.get().saturating_add(n).min(len);
                        let n = end.saturating_sub(a.get());
                        let n = usize::try_from(n)
                            .map_err(|_| Error::Unsupported("huge object header"))?;
                        let mut buf = vec![0u8; n];
                        storage
                            .read_at(a, &mut buf)
                            .map_err(h5chunk_cache::Error::from)?;
                        if a == at && seen_len.is_none() {
                            seen_len = h5chunk_format::object_header::chunk0_len(&buf, at).ok();
                        }
                        Ok(buf)
                    },
                )?;
                if let Some(l) = seen_len {
                    self.chunk0_len.insert(at, l);
                }
                Ok(v.insert(h))
            }
        }
    }

    /// The typed messages of the header at `at` (messages of unsupported datatype classes are
    /// skipped), in stored order. An attribute message that does not decode stays
    /// [`Message::Unknown`]: one bad attribute does not close its object; reading that
    /// attribute reports why.
    pub fn messages(
        &mut self,
        storage: &dyn Storage,
        sizes: Sizes,
        at: Addr,
    ) -> Result<Vec<Message>> {
        let h = self.get(storage, sizes, at)?;
        if h.messages().any(|m| m.flags.contains(MessageFlags::SHARED)) {
            return self.messages_resolving_shared(storage, sizes, at, 0);
        }
        let mut out = Vec::new();
        for m in h.messages() {
            keep_decoded(&mut out, m, Message::decode(m.kind, &m.data, at, sizes))?;
        }
        Ok(out)
    }

    /// [`messages`](Self::messages) of a header holding shared messages: each shared one is
    /// the first message of its type in the object header its reference names (a committed
    /// datatype's, typically), as libhdf5 reads it. `depth` bounds a chain of references, so
    /// a cycle in a damaged file is an error, not a stack overflow.
    fn messages_resolving_shared(
        &mut self,
        storage: &dyn Storage,
        sizes: Sizes,
        at: Addr,
        depth: u32,
    ) -> Result<Vec<Message>> {
        // Libhdf5 never chains committed messages; a few levels are already a damaged file.
        const MAX_SHARED_DEPTH: u32 = 4;
        let raw: Vec<RawMessage> = self.get(storage, sizes, at)?.messages().cloned().collect();
        let mut out = Vec::new();
        for m in raw {
            let decoded = if m.flags.contains(MessageFlags::SHARED) {
                let target = match SharedMessage::decode(
                    &mut h5chunk_format::cursor::Decoder::new(&m.data, at, sizes, "Shared message"),
                )? {
                    SharedMessage::Committed(a) => a,
                    SharedMessage::Heap(_) => {
                        return Err(Error::Unsupported(
                            "shared messages in the shared-message heap (SOHM)",
                        ));
                    }
                };
                if depth >= MAX_SHARED_DEPTH || target == at {
                    return Err(Error::corrupt(
                        "object header",
                        at,
                        "a chain or cycle of shared message references",
                    ));
                }
                let theirs =
                    self.messages_of_any(storage, sizes, target, depth.saturating_add(1))?;
                match theirs.into_iter().find(|t| t.kind() == m.kind) {
                    Some(t) => Ok(t),
                    None => {
                        return Err(Error::corrupt(
                            "object header",
                            target,
                            format!(
                                "no {} message for a shared reference from {at}",
                                m.kind.name()
                            ),
                        ));
                    }
                }
            } else {
                Message::decode(m.kind, &m.data, at, sizes)
            };
            keep_decoded(&mut out, &m, decoded)?;
        }
        Ok(out)
    }

    /// The typed messages of the header at `at`, shared ones resolved, at reference `depth`.
    fn messages_of_any(
        &mut self,
        storage: &dyn Storage,
        sizes: Sizes,
        at: Addr,
        depth: u32,
    ) -> Result<Vec<Message>> {
        let h = self.get(storage, sizes, at)?;
        if h.messages().any(|m| m.flags.contains(MessageFlags::SHARED)) {
            self.messages_resolving_shared(storage, sizes, at, depth)
        } else {
            self.messages(storage, sizes, at)
        }
    }

    /// The messages of the header at `at` as stored (with their creation orders).
    pub fn raw_messages(
        &mut self,
        storage: &dyn Storage,
        sizes: Sizes,
        at: Addr,
    ) -> Result<Vec<RawMessage>> {
        Ok(self.get(storage, sizes, at)?.messages().cloned().collect())
    }

    /// Insert a header built by this crate.
    pub fn insert_new(&mut self, h: ObjectHeader) {
        let at = h.addr();
        self.map.insert(at, h);
        self.dirty.insert(at);
    }

    /// Replace the first message of `kind` in the header at `at` with `m` (same encoded size:
    /// dataspace and layout messages keep their size when dims or addresses change).
    pub fn replace(
        &mut self,
        storage: &dyn Storage,
        sizes: Sizes,
        at: Addr,
        m: &Message,
    ) -> Result<()> {
        let h = self.get(storage, sizes, at)?;
        let mut data = Vec::new();
        m.encode(sizes, &mut data)?;
        let slot = h
            .messages_mut()
            .find(|r| r.kind == m.kind())
            .ok_or(Error::Internal(
                "replacing a message the object header lacks",
            ))?;
        if data.len() > slot.data.len() {
            return Err(Error::Internal("a rewritten message that grew"));
        }
        // Version 1 headers pad to 8 bytes; version 2 sizes are exact and unchanged here.
        data.resize(slot.data.len(), 0);
        slot.data = data;
        self.dirty.insert(at);
        Ok(())
    }

    /// Add message `m` to the header at `at`: into a NIL message large enough, else through a
    /// new continuation chunk allocated with `cache`'s allocator.
    pub fn add(
        &mut self,
        storage: &dyn Storage,
        cache: &MetadataCache,
        sizes: Sizes,
        at: Addr,
        m: RawMessage,
    ) -> Result<()> {
        let h = self.get(storage, sizes, at)?;
        // A header that tracks attribute creation order (h5py's track_order) gives every
        // message a creation order field: an attribute's is its creation index (the caller
        // sets it), any other message's 0, as libhdf5 writes them.
        let tracked = matches!(h.prefix(), Prefix::V2(p) if p.creation_order_tracked);
        let order = tracked.then_some(0u16);
        let v1 = h.version() == 1;
        let header_len = match (v1, tracked) {
            (true, _) => 8,
            (false, true) => 6,
            (false, false) => 4,
        };
        let nil_of = |len: usize| {
            let mut n = RawMessage::nil(len);
            n.creation_order = order;
            n
        };
        let mut m = m;
        m.creation_order = if tracked {
            Some(m.creation_order.unwrap_or(0))
        } else {
            None
        };
        if v1 {
            let padded = m.data.len().next_multiple_of(8);
            m.data.resize(padded, 0);
        }
        let need = m.data.len();
        // A message's size is a 2-byte field: refused here, before anything changes, rather
        // than at the flush that could not encode it.
        if need > MAX_MESSAGE_LEN {
            return Err(Error::Unsupported("object header messages over 64 KiB"));
        }
        // A NIL that holds the message and still leaves room for a continuation message, so
        // the header can always grow later.
        let cont_len = header_sum(&[usize::from(sizes.offsets()), usize::from(sizes.lengths())])?;
        let reserve = header_sum(&[header_len, cont_len])?;
        let nil_need = header_sum(&[need, header_len, reserve])?;
        if let Some((ci, mi)) = find_nil(h, |len| len >= nil_need) {
            replace_nil(h, ci, mi, m, header_len, order)?;
            if v1 {
                h.update_message_count()?;
            }
            self.dirty.insert(at);
            return Ok(());
        }
        // Otherwise a continuation message in a NIL, pointing to a new chunk; with no NIL for
        // it, a message large enough moves to the new chunk and the continuation takes its
        // place (as libhdf5 makes room in a full header).
        // The k-th continuation message points at chunk k + 1: the new one goes in the last
        // chunk, after every continuation message there is.
        let cont_nil = header_sum(&[cont_len, header_len])?;
        let fits_cont = |len: usize| len == cont_len || len >= cont_nil;
        let last = h.chunk_count().saturating_sub(1);
        let in_last = |pick: &dyn Fn(&RawMessage) -> bool| {
            h.chunk(last)
                .and_then(|c| c.messages.iter().position(pick))
                .map(|mi| (last, mi))
        };
        let nil = in_last(&|m| m.kind == MessageType::NIL && fits_cont(m.data.len()));
        let (ci, mi, moved) = match nil {
            Some((ci, mi)) => (ci, mi, None),
            None => {
                let (ci, mi) =
                    in_last(&|m| m.kind != MessageType::CONTINUATION && fits_cont(m.data.len()))
                        .ok_or(Error::Unsupported(
                            "growing an object header that has no free space left",
                        ))?;
                let lost = || Error::Internal("a message to move that is missing");
                let slot = h
                    .chunk_mut(ci)
                    .and_then(|c| c.messages.get_mut(mi))
                    .ok_or_else(lost)?;
                let len = slot.data.len();
                let moved = std::mem::replace(slot, nil_of(len));
                (ci, mi, Some(moved))
            }
        };
        let moved_len = moved
            .as_ref()
            .map_or(Ok(0), |m| header_sum(&[m.data.len(), header_len]))?;
        let area = CONTINUATION_CHUNK.max(header_sum(&[
            need, moved_len, header_len, header_len, reserve, 8,
        ])?);
        // OCHK signature and checksum
        let chunk_len = if v1 { area } else { header_sum(&[area, 8])? };
        let block = cache.allocator().allocate(chunk_len as u64)?;
        let cont = Message::Continuation(Continuation {
            offset: block,
            length: chunk_len as u64,
        });
        let mut cont = raw(&cont, MessageFlags::empty(), sizes)?;
        cont.creation_order = order;
        replace_nil(h, ci, mi, cont, header_len, order)?;
        let mut chunk = Chunk {
            addr: block,
            messages: vec![],
            gap: vec![],
        };
        // The rest of the area, after the message (and a moved one) and two message headers,
        // is a NIL: `area` was sized above to leave at least `reserve + 8` bytes for it.
        let rest = area
            .checked_sub(header_sum(&[need, moved_len, header_len, header_len])?)
            .ok_or(Error::Internal(
                "a continuation chunk too small for its message",
            ))?;
        if let Some(moved) = moved {
            chunk.messages.push(moved);
        }
        chunk.messages.push(m);
        chunk.messages.push(nil_of(rest));
        h.push_chunk(chunk)?;
        if v1 {
            h.update_message_count()?;
        }
        self.dirty.insert(at);
        Ok(())
    }

    /// Turn the first message for which `pick` holds (given its type and stored body) into a
    /// NIL of the same size: the space is reused by a later [`add`](Self::add). Whether one
    /// was found.
    pub fn remove(
        &mut self,
        storage: &dyn Storage,
        sizes: Sizes,
        at: Addr,
        pick: impl Fn(MessageType, &[u8]) -> bool,
    ) -> Result<bool> {
        let h = self.get(storage, sizes, at)?;
        let Some(slot) = h.messages_mut().find(|m| pick(m.kind, &m.data)) else {
            return Ok(false);
        };
        // A NIL keeps the creation order field of a header that tracks it.
        let order = slot.creation_order.map(|_| 0);
        *slot = RawMessage::nil(slot.data.len());
        slot.creation_order = order;
        self.dirty.insert(at);
        Ok(true)
    }

    /// Forget the header at `at` unless it has changes to write: the next access reads it from
    /// the file again (a SWMR reader's refresh).
    pub fn forget_clean(&mut self, at: Addr) {
        if !self.dirty.contains(&at) && !self.staged.contains(&at) {
            self.map.remove(&at);
        }
    }

    /// Hand every changed header to `put`, a chunk at a time: the chunk's address, whether
    /// the header is version 2, the chunk's image, and the blocks its messages point at
    /// ([`header_chunk_children`](crate::meta::header_chunk_children)). The headers stay
    /// changed until [`staged_written`](Self::staged_written) says the images reached the file
    /// (a header read meanwhile is not read from the file).
    pub fn stage(
        &mut self,
        sizes: Sizes,
        mut put: impl FnMut(Addr, bool, Vec<u8>, Vec<Addr>) -> Result<()>,
    ) -> Result<()> {
        for &at in &self.dirty {
            if let Some(h) = self.map.get(&at) {
                let v2 = h.version() == 2;
                for (i, (a, bytes)) in h.encode_chunks()?.into_iter().enumerate() {
                    let children = h
                        .chunk(i)
                        .map(|c| crate::meta::header_chunk_children(c, at, sizes))
                        .unwrap_or_default();
                    put(a, v2, bytes, children)?;
                }
            }
        }
        let done = std::mem::take(&mut self.dirty);
        self.staged.extend(done);
        Ok(())
    }

    /// The headers [`stage`](Self::stage) handed on are in the file.
    pub fn staged_written(&mut self) {
        self.staged.clear();
    }
}

/// The (chunk, message) position of the first NIL whose data length satisfies `fits`.
fn find_nil(h: &ObjectHeader, fits: impl Fn(usize) -> bool) -> Option<(usize, usize)> {
    (0..h.chunk_count()).find_map(|ci| {
        let chunk = h.chunk(ci)?;
        chunk
            .messages
            .iter()
            .position(|m| m.kind == MessageType::NIL && fits(m.data.len()))
            .map(|mi| (ci, mi))
    })
}

/// Put `m` where NIL `mi` of chunk `ci` was, keeping the rest of the NIL's space as a NIL.
/// [`find_nil`] found the NIL large enough; an error if it is not there or too small.
fn replace_nil(
    h: &mut ObjectHeader,
    ci: usize,
    mi: usize,
    m: RawMessage,
    header_len: usize,
    order: Option<u16>,
) -> Result<()> {
    let lost = || Error::Internal("replacing a NIL message that is missing or too small");
    let chunk = h.chunk_mut(ci).ok_or_else(lost)?;
    let slot = chunk.messages.get_mut(mi).ok_or_else(lost)?;
    let rest = slot.data.len().checked_sub(m.data.len()).ok_or_else(lost)?;
    *slot = m;
    if rest > 0 {
        let nil = rest.checked_sub(header_len).ok_or_else(lost)?;
        // `mi` indexes the messages, so `mi + 1` is at most their count.
        let after = mi.checked_add(1).ok_or_else(lost)?;
        let mut nil = RawMessage::nil(nil);
        nil.creation_order = order;
        chunk.messages.insert(after, nil);
    }
    Ok(())
}

/// The largest message body an object header holds (its size field is 2 bytes).
pub(crate) const MAX_MESSAGE_LEN: usize = u16::MAX as usize;

/// The sum of object header sizes: small numbers (sizes of offsets and lengths, message
/// headers) and a message's length.
fn header_sum(parts: &[usize]) -> Result<usize> {
    parts
        .iter()
        .try_fold(0usize, |acc, &p| acc.checked_add(p))
        .ok_or(Error::Unsupported("object header messages of 2^64 bytes"))
}

/// A new object header at an address allocated from `cache`, holding `messages`, chunk 0
/// padded to `pad` bytes of messages (as libhdf5 pads a dataset's to 256).
pub(crate) fn create_header(
    cache: &MetadataCache,
    sizes: Sizes,
    version2: bool,
    messages: Vec<RawMessage>,
    pad: usize,
    track_order: bool,
) -> Result<ObjectHeader> {
    if track_order && !version2 {
        return Err(Error::Unsupported(
            "creation-order tracking in version 1 object headers (library version bounds before 1.8)",
        ));
    }
    let prefix = v2::Prefix {
        creation_order_tracked: track_order,
        creation_order_indexed: track_order,
        ..v2::Prefix::default()
    };
    let build = |at: Addr| {
        if version2 {
            ObjectHeader::new_v2(at, sizes, prefix, messages.clone(), Some(pad))
        } else {
            ObjectHeader::new_v1(
                at,
                sizes,
                1,
                messages.clone(),
                Some(pad.next_multiple_of(8)),
            )
        }
    };
    let len: usize = build(Addr(0))?
        .encode_chunks()?
        .iter()
        .map(|(_, b)| b.len())
        .sum();
    let at = cache.allocator().allocate(len as u64)?;
    Ok(build(at)?)
}
