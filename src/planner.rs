// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//! The planner: turns a NIXL transfer (local DRAM descriptors paired with OBJ descriptors)
//! into `Fold`s, each one DAOS RPC on one key. Pure: no I/O, no DAOS.
//!
//! How descriptors become RPCs is the `FoldPolicy`:
//! - `Sized` (the default, `fold=auto`): a key's descriptors fold into RPCs of up to
//!   `rpc_target_bytes` of payload, a key larger than that is split into about equal RPCs, and a
//!   descriptor larger than that is cut into equal pieces. Small layers then cost one RPC per
//!   key (on a real engine 4 KiB and 64 KiB layers run 1.4-3x faster folded than one RPC per
//!   layer), while a very large key still goes out as several RPCs that DAOS can pipeline (its
//!   bulk transfers and server-side processing overlap across RPCs in flight).
//! - `PerKey` (`fold=true`): all descriptors of a request that target the same key in one RPC.
//! - `Off` (`fold=false`): one RPC per descriptor.
//!
//! Within a fold, neighbours contiguous on both sides merge into one extent, and the fold's
//! extents are listed in offset order (DAOS reports a read past the written end only as trimmed
//! tail holes, see `plan`). Every policy also closes a fold where DAOS requires or prefers it: recxs of one
//! iod must not overlap, and the RPC body (the recxs, and their checksums where the container
//! has them; the data itself goes by bulk transfer above ~19 KiB) must stay within DAOS's 20 KiB
//! RPC size, past which the server needs an extra round trip to fetch the body.

use std::collections::{BTreeMap, HashMap};

use crate::daos::io::Extent;
use crate::error::{Error, Result};
use crate::key::{ChunkNames, ObjectKey};

/// DAOS's RPC size (`DAOS_RPC_SIZE`): a body larger than this is not sent with the request;
/// the server fetches it in an extra round trip. Data of up to `DAOS_BULK_LIMIT` (this less
/// 1 KiB) travels inline, larger data by bulk transfer, outside the body.
pub const DAOS_RPC_SIZE: u64 = 20 * 1024;
/// Headers of an update/fetch RPC (CaRT, Mercury and DAOS's own fields), as DAOS reserves them.
const RPC_HEADER_BYTES: u64 = 1024;
/// One recx (index, count) plus the checksum-info header DAOS sends for it.
const EXTENT_BODY_BYTES: u64 = 16 + 24;
/// Checksums, budgeted as if the container had them on (a container created with default
/// properties has them off; one with `cksum` set sends one per 32 KiB chunk, the default chunk
/// size, of up to 8 bytes: crc64), so that a fold fits one RPC either way.
const CSUM_CHUNK: u64 = 32 * 1024;
const CSUM_BYTES: u64 = 8;

/// Estimated body bytes one extent adds to an update/fetch RPC.
pub fn extent_body_bytes(offset: u64, len: u64) -> u64 {
    let chunks = if len == 0 { 0 } else { (offset + len - 1) / CSUM_CHUNK - offset / CSUM_CHUNK + 1 };
    EXTENT_BODY_BYTES + CSUM_BYTES * chunks
}

/// Estimated body bytes of an RPC with no extents yet (headers and the dkey).
pub fn rpc_body_base(key: &ObjectKey) -> u64 {
    RPC_HEADER_BYTES + key.as_bytes().len() as u64
}

/// How descriptors of one request become DAOS RPCs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FoldPolicy {
    /// One RPC per descriptor (`fold=false`).
    Off,
    /// Every descriptor of a key in one RPC (`fold=true`).
    PerKey,
    /// Fold a key's descriptors into RPCs of at most `target` payload bytes, a larger key into
    /// about equal RPCs, and cut a descriptor larger than `target` into equal pieces
    /// (`fold=auto`, `rpc_target_bytes`).
    Sized { target: u64 },
}

/// One side of a descriptor pair: local buffer `addr`, object `offset`, `len` bytes, `key`.
#[derive(Clone, Debug)]
pub struct Pair {
    pub addr: u64,
    pub offset: u64,
    pub len: u64,
    pub key: ObjectKey,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Fold {
    pub key: ObjectKey,
    pub extents: Vec<Extent>,
}

impl Fold {
    #[cfg(test)]
    pub fn bytes(&self) -> u64 {
        self.extents.iter().map(|e| e.len).sum()
    }
}

/// Byte ranges already in a fold, to find overlaps. Descriptors usually arrive at increasing
/// offsets (KVBM's layers), so while they do, a range is checked against the highest end seen
/// so far; the first out-of-order range switches to an ordered map, O(log n) per check.
#[derive(Default)]
struct Ranges {
    max_end: u64,
    in_order: Vec<(u64, u64)>,
    tree: Option<BTreeMap<u64, u64>>,
}

impl Ranges {
    fn overlaps(&mut self, start: u64, end: u64) -> bool {
        if self.tree.is_none() && start >= self.max_end {
            return false;
        }
        let tree = self.tree.get_or_insert_with(|| self.in_order.drain(..).collect());
        // The range starting at or before `start`, and the first one starting after it.
        if let Some((_, &e)) = tree.range(..=start).next_back() {
            if e > start {
                return true;
            }
        }
        matches!(tree.range(start..).next(), Some((&s, _)) if s < end)
    }

    /// Records [start, end); `start` may be that of the last range recorded, which then grows.
    fn insert(&mut self, start: u64, end: u64) {
        self.max_end = self.max_end.max(end);
        match (&mut self.tree, self.in_order.last_mut()) {
            (Some(tree), _) => {
                tree.insert(start, end);
            }
            (None, Some(last)) if last.0 == start => last.1 = end,
            (None, _) => self.in_order.push((start, end)),
        }
    }
}

/// The open fold of each key. Consecutive descriptors mostly target the same key, whose
/// registration they share, so the previous key is compared (by pointer, then bytes) before
/// the map is hashed.
#[derive(Default)]
struct OpenFolds<'a> {
    last: Option<(&'a ObjectKey, usize)>,
    by_key: HashMap<&'a ObjectKey, usize>,
    slots: Vec<Slot>,
}

/// A key's open fold: its index in the plan, the ranges it holds, its payload and its
/// estimated RPC body.
struct Slot {
    fold: usize,
    ranges: Ranges,
    bytes: u64,
    body: u64,
}

impl<'a> OpenFolds<'a> {
    fn get(&mut self, key: &'a ObjectKey) -> Option<&mut Slot> {
        let slot = match self.last {
            Some((k, slot)) if k == key => slot,
            _ => *self.by_key.get(key)?,
        };
        self.last = Some((key, slot));
        Some(&mut self.slots[slot])
    }

    fn open(&mut self, key: &'a ObjectKey, s: Slot) {
        let slot = self.slots.len();
        self.slots.push(s);
        self.by_key.insert(key, slot);
        self.last = Some((key, slot));
    }
}

/// Adds `ext` of `key` to the key's open fold when it fits there (no overlap, payload within
/// `limit`, body within DAOS's RPC size), else opens a new fold for it.
fn add<'a>(folds: &mut Vec<Fold>, open: &mut OpenFolds<'a>, key: &'a ObjectKey, ext: Extent, limit: u64) {
    let end = ext.offset + ext.len;
    if let Some(s) = open.get(key) {
        if s.bytes.saturating_add(ext.len) <= limit && !s.ranges.overlaps(ext.offset, end) {
            let f = &mut folds[s.fold];
            let last = f.extents.last_mut().expect("open folds are never empty");
            if last.offset + last.len == ext.offset && last.addr + last.len == ext.addr {
                // Contiguous in the object and in memory: grow the last extent.
                let body = s.body - extent_body_bytes(last.offset, last.len)
                    + extent_body_bytes(last.offset, last.len + ext.len);
                if body <= DAOS_RPC_SIZE {
                    s.ranges.insert(last.offset, end);
                    last.len += ext.len;
                    s.bytes += ext.len;
                    s.body = body;
                    return;
                }
            } else {
                let body = s.body + extent_body_bytes(ext.offset, ext.len);
                if body <= DAOS_RPC_SIZE {
                    s.ranges.insert(ext.offset, end);
                    f.extents.push(ext);
                    s.bytes += ext.len;
                    s.body = body;
                    return;
                }
            }
        }
    }
    let mut ranges = Ranges::default();
    ranges.insert(ext.offset, end);
    let body = rpc_body_base(key) + extent_body_bytes(ext.offset, ext.len);
    open.open(key, Slot { fold: folds.len(), ranges, bytes: ext.len, body });
    folds.push(Fold { key: key.clone(), extents: vec![ext] });
}

/// The payload limit of each key's RPCs under a `Sized` policy: a key of `total` bytes needs
/// n = ceil(total / target) RPCs, and packing up to total / n each (rounded up to a whole number
/// of the key's largest descriptor, when that stays within the target) splits it into n about
/// equal RPCs, not n - 1 full ones and a small tail: 10 layers of 1 MiB under an 8 MiB target go
/// out as 5 + 5, not 8 + 2; 40 layers of 32 KiB under 1 MiB as 2 x 640 KiB.
struct Balanced<'a> {
    target: u64,
    last: Option<(&'a ObjectKey, u64)>,
    per_key: HashMap<&'a ObjectKey, u64>,
}

impl<'a> Balanced<'a> {
    fn new(pairs: &'a [Pair], target: u64) -> Balanced<'a> {
        let target = target.max(1);
        let mut sums: HashMap<&'a ObjectKey, (u64, u64)> = HashMap::new();
        for p in pairs {
            let e = sums.entry(&p.key).or_default();
            e.0 = e.0.saturating_add(p.len);
            e.1 = e.1.max(p.len);
        }
        let per_key = sums
            .into_iter()
            .map(|(k, (total, largest))| {
                let share = total.div_ceil(total.div_ceil(target).max(1));
                let limit = match share.div_ceil(largest.max(1)).checked_mul(largest) {
                    Some(l) if l <= target => l.max(1),
                    _ => target,
                };
                (k, limit)
            })
            .collect();
        Balanced { target, last: None, per_key }
    }

    fn get(&mut self, key: &'a ObjectKey) -> u64 {
        if let Some((k, limit)) = self.last {
            if k == key {
                return limit;
            }
        }
        let limit = self.per_key.get(key).copied().unwrap_or(self.target);
        self.last = Some((key, limit));
        limit
    }
}

/// Length of the pieces a descriptor of `len` bytes is cut into under a `target` payload: about
/// equal pieces of at most `target`, so that a 1.5 MiB descriptor becomes two of 768 KiB, not
/// 1 MiB and 512 KiB; a multiple of 4 KiB where that stays within `target`, so that pieces
/// start on checksum-chunk boundaries when the descriptor does.
fn piece_len(len: u64, target: u64) -> u64 {
    let piece = len.div_ceil(len.div_ceil(target));
    let aligned = piece.next_multiple_of(4096);
    if aligned <= target {
        aligned
    } else {
        piece
    }
}

pub fn plan(pairs: &[Pair], policy: FoldPolicy) -> Result<Vec<Fold>> {
    let mut folds: Vec<Fold> = Vec::new();
    let mut open = OpenFolds::default();
    let mut balanced = match policy {
        FoldPolicy::Sized { target } => Some(Balanced::new(pairs, target)),
        _ => None,
    };
    for p in pairs {
        if p.len == 0 {
            continue;
        }
        p.offset.checked_add(p.len).filter(|&e| e <= i64::MAX as u64).ok_or_else(|| {
            Error::InvalidArg(format!(
                "descriptor of key {:?} at offset {} with length {} runs past the largest DAOS record index",
                p.key.display(),
                p.offset,
                p.len
            ))
        })?;
        let ext = Extent { offset: p.offset, len: p.len, addr: p.addr };
        match policy {
            FoldPolicy::Off => folds.push(Fold { key: p.key.clone(), extents: vec![ext] }),
            FoldPolicy::PerKey => add(&mut folds, &mut open, &p.key, ext, u64::MAX),
            FoldPolicy::Sized { .. } => {
                let target = balanced.as_mut().expect("sized plans have the balanced targets").get(&p.key);
                let piece = if p.len > target { piece_len(p.len, target) } else { p.len };
                let mut done = 0;
                while done < p.len {
                    let n = piece.min(p.len - done);
                    let cut = Extent { offset: p.offset + done, len: n, addr: p.addr + done };
                    add(&mut folds, &mut open, &p.key, cut, target);
                    done += n;
                }
            }
        }
    }
    // DAOS trims only the tail holes of a fetch, in recx order: a fold whose extent past the
    // written end is not its last one would come back whole, with the caller's stale bytes in
    // that extent. In offset order, any extent past the end is last. (The recxs of a fold
    // never overlap, so the order is total; each extent keeps its buffer address.)
    for f in &mut folds {
        if !f.extents.is_sorted_by_key(|e| e.offset) {
            f.extents.sort_unstable_by_key(|e| e.offset);
        }
    }
    Ok(folds)
}

/// The pairs of a chunked container (`chunk_bytes` > 0): a pair is cut where a multiple of
/// `chunk` falls inside it, and each piece names the dkey of its chunk (`ObjectKey::chunk`:
/// the key itself for chunk 0, a dkey of its own for each later one), keeping its object
/// offset. DAOS places each dkey on a target by its hash, so one large value is written and
/// read by several targets at once; `plan` then folds each chunk's pieces as a key of its own,
/// so no RPC crosses a chunk. A value within the first chunk keeps the unchunked layout.
/// `chunk` 0 returns the pairs as they are. `names` is the container's naming of chunks.
pub fn chunk(pairs: Vec<Pair>, chunk: u64, names: ChunkNames) -> Vec<Pair> {
    if chunk == 0 || pairs.iter().all(|p| p.offset.saturating_add(p.len) <= chunk) {
        return pairs;
    }
    let mut out = Vec::with_capacity(pairs.len());
    // A key's descriptors come together and in order (a KV block's layers): the dkey of the
    // last chunk is reused rather than built again.
    let mut last: Option<(ObjectKey, u64, ObjectKey)> = None;
    for p in pairs {
        // A descriptor past DAOS's largest record index goes on whole, for `plan` to refuse
        // with its own message (and no sum here can overflow).
        if p.len == 0 || p.offset.checked_add(p.len).is_none_or(|e| e > i64::MAX as u64) {
            out.push(p);
            continue;
        }
        let mut done = 0;
        loop {
            let at = p.offset + done;
            let index = at / chunk;
            let len = (p.len - done).min((index + 1).saturating_mul(chunk) - at);
            let dkey = match &last {
                Some((k, i, d)) if *i == index && *k == p.key => d.clone(),
                _ => {
                    let d = p.key.chunk(index, names);
                    last = Some((p.key.clone(), index, d.clone()));
                    d
                }
            };
            out.push(Pair { addr: p.addr + done, offset: at, len, key: dkey });
            done += len;
            if done >= p.len {
                break;
            }
        }
    }
    out
}

/// A plan with more RPCs, for an engine that would otherwise sit idle (one request alone: a KV
/// fetch on a request's critical path). Folds of at least twice `min_piece` bytes are cut into
/// about equal pieces of at least `min_piece`, so that the request has about `want` RPCs in
/// all (each fold's share rounded to whole pieces): on an idle engine the few large RPCs of a folded plan run one after another, while
/// several smaller ones overlap (the client's bulk setup, the wire, the engine's processing).
/// Under load the folded plan wins, so the engine asks for this only when little is in flight.
///
/// A piece is a contiguous run of its fold's extents in offset order, with an extent cut where
/// a piece ends: it holds no more extents than its fold, and each spans no more checksum chunks
/// than the extent it came from, so a piece fits DAOS's RPC body whenever its fold did; pieces
/// of a fold never overlap, and each keeps its extents in offset order. None when the plan has
/// `want` RPCs already or no fold is large enough to cut.
pub fn spread(folds: &[Fold], want: usize, min_piece: u64) -> Option<Vec<Fold>> {
    if folds.len() >= want || min_piece == 0 {
        return None;
    }
    let bytes = |f: &Fold| f.extents.iter().map(|e| e.len).sum::<u64>();
    let total: u64 = folds.iter().map(bytes).sum();
    let piece = (total / want as u64).max(min_piece);
    let mut out = Vec::with_capacity(want);
    let mut cut = false;
    for f in folds {
        let b = bytes(f);
        // About b / piece pieces (rounded), none smaller than min_piece.
        let n = (b + piece / 2) / piece;
        let n = n.min(b / min_piece);
        if n < 2 {
            out.push(f.clone());
            continue;
        }
        cut = true;
        let size = b.div_ceil(n).next_multiple_of(4096).min(b);
        let mut current = Fold { key: f.key.clone(), extents: Vec::new() };
        let mut filled = 0;
        for e in &f.extents {
            let mut done = 0;
            while done < e.len {
                let n = (e.len - done).min(size - filled);
                current.extents.push(Extent { offset: e.offset + done, len: n, addr: e.addr + done });
                done += n;
                filled += n;
                if filled == size {
                    out.push(std::mem::replace(&mut current, Fold { key: f.key.clone(), extents: Vec::new() }));
                    filled = 0;
                }
            }
        }
        if !current.extents.is_empty() {
            out.push(current);
        }
    }
    cut.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(s: &str) -> ObjectKey {
        ObjectKey::from_registration(s.as_bytes(), 0)
    }
    fn pair(k: &str, addr: u64, offset: u64, len: u64) -> Pair {
        Pair { addr, offset, len, key: key(k) }
    }
    const PK: FoldPolicy = FoldPolicy::PerKey;
    const OFF: FoldPolicy = FoldPolicy::Off;
    const KIB: u64 = 1 << 10;
    const MIB: u64 = 1 << 20;
    fn sized(target: u64) -> FoldPolicy {
        FoldPolicy::Sized { target }
    }
    /// `layers` descriptors of `len` bytes per key, layer-major in memory (a KV cache's layout:
    /// a key's layers lie apart and never merge).
    fn kv(keys: u64, layers: u64, len: u64) -> Vec<Pair> {
        let mut pairs = Vec::new();
        for k in 0..keys {
            for l in 0..layers {
                pairs.push(pair(&format!("blk{k}"), (l * keys + k) * len, l * len, len));
            }
        }
        pairs
    }
    fn body(f: &Fold) -> u64 {
        rpc_body_base(&f.key) + f.extents.iter().map(|e| extent_body_bytes(e.offset, e.len)).sum::<u64>()
    }

    #[test]
    fn kvbm_layers_fold_into_one_rpc_per_key() {
        // 2 blocks x 40 layers; layer buffers are not contiguous in memory (stride 2 MiB).
        let mib = 1 << 20;
        let mut pairs = Vec::new();
        for b in 0..2u64 {
            for l in 0..40u64 {
                pairs.push(pair(&format!("blk{b}"), (b * 40 + l) * 2 * mib, l * mib, mib));
            }
        }
        let folds = plan(&pairs, PK).unwrap();
        assert_eq!(folds.len(), 2);
        assert_eq!(folds[0].key, key("blk0"));
        assert_eq!(folds[0].extents.len(), 40);
        assert_eq!(folds[1].bytes(), 40 * mib);
        assert_eq!(folds[1].extents[3], Extent { offset: 3 * mib, len: mib, addr: 43 * 2 * mib });

        let unfolded = plan(&pairs, OFF).unwrap();
        assert_eq!(unfolded.len(), 80);
        assert!(unfolded.iter().all(|f| f.extents.len() == 1));
    }

    #[test]
    fn contiguous_neighbours_merge() {
        let pairs: Vec<_> = (0..4).map(|i| pair("k", 1000 + i * 10, i * 10, 10)).collect();
        let folds = plan(&pairs, PK).unwrap();
        assert_eq!(folds, vec![Fold { key: key("k"), extents: vec![Extent { offset: 0, len: 40, addr: 1000 }] }]);
    }

    #[test]
    fn interleaved_keys_keep_first_appearance_order() {
        let pairs = vec![pair("a", 0, 0, 8), pair("b", 100, 0, 8), pair("a", 200, 64, 8), pair("c", 300, 0, 8)];
        let folds = plan(&pairs, PK).unwrap();
        let keys: Vec<_> = folds.iter().map(|f| f.key.display()).collect();
        assert_eq!(keys, ["a", "b", "c"]);
        assert_eq!(folds[0].extents.len(), 2);
    }

    #[test]
    fn overlapping_ranges_split_the_fold() {
        // Reading the same range into two buffers is legal; DAOS rejects overlapping recxs in
        // one iod, so the second goes into a second RPC.
        let pairs = vec![pair("k", 0, 0, 100), pair("k", 1000, 50, 100), pair("k", 5000, 400, 10)];
        let folds = plan(&pairs, PK).unwrap();
        assert_eq!(folds.len(), 2);
        assert_eq!(folds[0].extents.len(), 1);
        assert_eq!(folds[1].extents.len(), 2);
    }

    #[test]
    fn a_fold_lists_its_extents_in_offset_order() {
        let pairs = vec![pair("k", 9000, 500, 10), pair("k", 1000, 0, 10), pair("k", 5000, 100, 10)];
        for policy in [PK, sized(8 << 20)] {
            let folds = plan(&pairs, policy).unwrap();
            assert_eq!(folds.len(), 1);
            let got: Vec<_> = folds[0].extents.iter().map(|e| (e.offset, e.addr)).collect();
            assert_eq!(got, [(0, 1000), (100, 5000), (500, 9000)], "each extent keeps its buffer");
        }
    }

    #[test]
    fn ranges_overlap_detection() {
        let mut r = Ranges::default();
        r.insert(10, 20);
        r.insert(30, 40);
        assert!(!r.overlaps(0, 10));
        assert!(!r.overlaps(20, 30));
        assert!(r.overlaps(19, 21));
        assert!(r.overlaps(5, 11));
        assert!(r.overlaps(0, 100));
        assert!(r.overlaps(35, 36));
        assert!(!r.overlaps(40, 41));
    }

    #[test]
    fn rpc_body_limit_splits_many_small_extents() {
        // 1000 separate 4 KiB extents: each adds a recx, its checksum header and one checksum
        // (48 bytes) to the body, so ~405 fit in DAOS's 20 KiB RPC with its 1 KiB of headers.
        let pairs: Vec<_> = (0..1000).map(|i| pair("k", i * 8 * KIB, i * 4 * KIB, 4 * KIB)).collect();
        for policy in [PK, sized(u64::MAX)] {
            let folds = plan(&pairs, policy).unwrap();
            let n: Vec<_> = folds.iter().map(|f| f.extents.len()).collect();
            assert_eq!(n, [405, 405, 190], "{policy:?}");
            assert!(folds.iter().all(|f| body(f) <= DAOS_RPC_SIZE));
        }
        // 40 layers of 1 MiB carry 32 checksums each and still fit one body.
        let folds = plan(&kv(1, 40, MIB), PK).unwrap();
        assert_eq!(folds.len(), 1);
        assert!(body(&folds[0]) <= DAOS_RPC_SIZE, "{}", body(&folds[0]));
    }

    #[test]
    fn extent_body_counts_the_checksum_chunks_it_touches() {
        assert_eq!(extent_body_bytes(0, 4 * KIB), EXTENT_BODY_BYTES + CSUM_BYTES);
        assert_eq!(extent_body_bytes(0, 32 * KIB), EXTENT_BODY_BYTES + CSUM_BYTES);
        assert_eq!(extent_body_bytes(30 * KIB, 4 * KIB), EXTENT_BODY_BYTES + 2 * CSUM_BYTES);
        assert_eq!(extent_body_bytes(0, MIB), EXTENT_BODY_BYTES + 32 * CSUM_BYTES);
    }

    #[test]
    fn sized_folds_small_layers_and_splits_large_ones() {
        // 4 KiB layers: one RPC per key, as with fold=true.
        let small = kv(3, 64, 4 * KIB);
        assert_eq!(plan(&small, sized(MIB)).unwrap(), plan(&small, PK).unwrap());
        // 64 KiB layers under a 256 KiB target: two RPCs of four layers per key.
        let folds = plan(&kv(2, 8, 64 * KIB), sized(256 * KIB)).unwrap();
        assert_eq!(folds.len(), 4);
        assert!(folds.iter().all(|f| f.extents.len() == 4 && f.bytes() == 256 * KIB));
        assert_eq!(folds[1].key, key("blk0"));
        assert_eq!(folds[1].extents[0].offset, 256 * KIB);
        // 1 MiB layers: one RPC per layer at a 1 MiB target (as fold=false), four at 4 MiB.
        let big = kv(2, 40, MIB);
        assert_eq!(plan(&big, sized(MIB)).unwrap(), plan(&big, OFF).unwrap());
        let folds = plan(&big, sized(4 * MIB)).unwrap();
        assert_eq!(folds.len(), 20);
        assert!(folds.iter().all(|f| f.extents.len() == 4));
        // Folds of one key come one after another, so the lanes (round robin) spread them.
        assert!(folds[..10].iter().all(|f| f.key == key("blk0")));
    }

    #[test]
    fn sized_splits_a_key_into_equal_rpcs() {
        let sizes =
            |pairs: &[Pair], target| plan(pairs, sized(target)).unwrap().iter().map(|f| f.bytes()).collect::<Vec<_>>();
        // 10 MiB under 8 MiB: 5 + 5, not 8 + 2; 1.25 MiB under 1 MiB: 640 + 640 KiB.
        assert_eq!(sizes(&kv(1, 10, MIB), 8 * MIB), [5 * MIB, 5 * MIB]);
        assert_eq!(sizes(&kv(1, 40, 32 * KIB), MIB), [640 * KIB, 640 * KIB]);
        // Where equal shares do not fall on whole layers, whole layers up to the target.
        assert_eq!(sizes(&kv(1, 10, MIB), 4 * MIB), [4 * MIB, 4 * MIB, 2 * MIB]);
        // Each key is balanced on its own total.
        let mut pairs = kv(1, 10, MIB);
        pairs.extend((0..3).map(|l| pair("other", (1 << 40) + l * MIB, l * MIB, MIB)));
        assert_eq!(sizes(&pairs, 8 * MIB), [5 * MIB, 5 * MIB, 3 * MIB]);
    }

    #[test]
    fn sized_cuts_large_descriptors_into_equal_pieces() {
        let folds = plan(&[pair("k", 1 << 30, 0, 8 * MIB)], sized(MIB)).unwrap();
        assert_eq!(folds.len(), 8);
        for (i, f) in folds.iter().enumerate() {
            let i = i as u64;
            assert_eq!(f.extents, [Extent { offset: i * MIB, len: MIB, addr: (1 << 30) + i * MIB }]);
        }
        // 1.5 MiB: two pieces of 768 KiB, not 1 MiB and 512 KiB.
        let folds = plan(&[pair("k", 0, 0, 3 * MIB / 2)], sized(MIB)).unwrap();
        assert_eq!(folds.iter().map(|f| f.bytes()).collect::<Vec<_>>(), [768 * KIB, 768 * KIB]);
        // Pieces stay within a target that is no multiple of 4 KiB.
        let folds = plan(&[pair("k", 0, 0, 10_000)], sized(3000)).unwrap();
        assert_eq!(folds.iter().map(|f| f.bytes()).collect::<Vec<_>>(), [2500; 4]);
        // A piece that fits the key's open fold joins it.
        // (12 KiB under a 7 KiB target: two pieces of 6 KiB; the first joins the 1 KiB before.)
        let folds = plan(&[pair("k", 0, 0, KIB), pair("k", 64 * KIB, KIB, 12 * KIB)], sized(7 * KIB)).unwrap();
        assert_eq!(folds.iter().map(|f| f.extents.len()).collect::<Vec<_>>(), [2, 1]);
        assert_eq!(folds[1].extents, [Extent { offset: 7 * KIB, len: 6 * KIB, addr: 70 * KIB }]);
    }

    #[test]
    fn zero_length_skipped_and_overflow_rejected() {
        let folds = plan(&[pair("k", 0, 0, 0)], PK).unwrap();
        assert!(folds.is_empty());
        let e = plan(&[pair("k", 0, u64::MAX - 1, 10)], PK).unwrap_err();
        assert!(e.to_string().contains("offset"), "{e}");
    }

    #[test]
    fn spread_cuts_large_folds_into_about_equal_pieces() {
        // One 40 MiB key of 1 MiB layers, folded into 5 RPCs of 8 MiB: for 8 RPCs (of 5 MiB), each
        // fold becomes two of 4 MiB.
        let folds = plan(&kv(1, 40, MIB), sized(8 * MIB)).unwrap();
        assert_eq!(folds.len(), 5);
        let s = spread(&folds, 8, MIB).unwrap();
        assert_eq!(s.iter().map(|f| f.bytes()).collect::<Vec<_>>(), vec![4 * MIB; 10]);
        // For 40: 40 of 1 MiB.
        assert_eq!(spread(&folds, 40, MIB).unwrap().len(), 40);
        // One 8 MiB descriptor: 8 pieces of 1 MiB, each one extent, in offset order.
        let one = plan(&[pair("k", 1 << 30, 0, 8 * MIB)], sized(8 * MIB)).unwrap();
        let s = spread(&one, 8, MIB).unwrap();
        assert_eq!(s.len(), 8);
        for (i, f) in s.iter().enumerate() {
            assert_eq!(f.extents, vec![Extent { offset: i as u64 * MIB, len: MIB, addr: (1 << 30) + i as u64 * MIB }]);
        }
        // A floor of 2 MiB: 4 pieces, never smaller than the floor.
        assert_eq!(spread(&one, 8, 2 * MIB).unwrap().len(), 4);
        // Small keys (512 KiB, 64 KiB layers) are not cut: folded they win even alone.
        assert!(spread(&plan(&kv(1, 8, 64 * KIB), sized(8 * MIB)).unwrap(), 8, MIB).is_none());
        // A plan with as many RPCs as wanted already is left alone.
        assert!(spread(&plan(&kv(8, 1, 4 * MIB), sized(8 * MIB)).unwrap(), 8, MIB).is_none());
        // An uneven size: pieces 4 KiB aligned, the last one smaller, all bytes kept.
        let odd = plan(&[pair("k", 0, 0, 3 * MIB + 12345)], sized(8 * MIB)).unwrap();
        let s = spread(&odd, 8, MIB).unwrap();
        assert_eq!(s.len(), 3);
        assert!(s[..2].iter().all(|f| f.bytes() % 4096 == 0));
        assert_eq!(s.iter().map(|f| f.bytes()).sum::<u64>(), 3 * MIB + 12345);
    }

    /// Property: for any input and policy, every byte of every descriptor is covered exactly
    /// once, at the same (offset, addr) correspondence; no fold holds overlapping ranges or
    /// outgrows DAOS's RPC body (unless it is a single extent); a sized fold stays within its
    /// target; and a target larger than any request folds exactly as fold=true.
    #[test]
    fn folding_preserves_every_byte() {
        let mut seed = 0x1234_5678_u64;
        let mut rnd = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        for round in 0..300 {
            // Now and then a request with many descriptors over a wide range, where the body
            // limit rather than overlaps closes folds.
            let big = round % 20 == 0;
            let (n, span) = if big { (1 + rnd(1500), 1 << 24) } else { (1 + rnd(60), 4096) };
            let pairs: Vec<Pair> = (0..n)
                .map(|_| {
                    let max = if !big && rnd(4) == 0 { 3 * KIB } else { 64 };
                    let len = 1 + rnd(max);
                    pair(["a", "b", "c"][rnd(3) as usize], rnd(1 << 20), rnd(span), len)
                })
                .collect();
            let target = 1 + rnd(8 * KIB);
            // Chunked (a chunked container's layout) in most rounds, by a size that may fall
            // anywhere inside a descriptor.
            let chunk_size = [0, 1000, 4096, 64 * KIB, 1 << 20][rnd(5) as usize];
            let names = [ChunkNames::Plain, ChunkNames::Spread { groups: 1 + rnd(9) as u32 }][rnd(2) as usize];
            let chunked = chunk(pairs.clone(), chunk_size, names);
            // Each plan, and the same plan spread (as for an idle engine: crate::engine).
            let (want, floor) = (1 + rnd(24) as usize, 1 + rnd(4 * KIB));
            let plans = [PK, OFF, sized(target), sized(u64::MAX)].into_iter().flat_map(|policy| {
                let folds = plan(&chunked, policy).unwrap();
                let spread = spread(&folds, want, floor);
                [Some(folds), spread].into_iter().flatten().map(move |f| (policy, f))
            });
            for (policy, folds) in plans {
                let mut got: Vec<(u8, u64, u64)> = Vec::new();
                for f in &folds {
                    assert!(f.extents.len() == 1 || body(f) <= DAOS_RPC_SIZE, "{policy:?}: body {}", body(f));
                    match policy {
                        FoldPolicy::Off => assert_eq!(f.extents.len(), 1),
                        FoldPolicy::Sized { target } => assert!(f.bytes() <= target, "{policy:?}: {}", f.bytes()),
                        FoldPolicy::PerKey => {}
                    }
                    assert!(f.extents.is_sorted_by_key(|e| e.offset), "a fold's extents are in offset order");
                    let mut r = Ranges::default();
                    for e in &f.extents {
                        match e.offset.checked_div(chunk_size) {
                            // Every extent within one chunk, in that chunk's dkey.
                            Some(index) => {
                                assert_eq!((e.offset + e.len - 1) / chunk_size, index, "an extent crosses a chunk");
                                assert_eq!(
                                    f.key,
                                    key(&f.key.display()[..1]).chunk(index, names),
                                    "extent at {} in the wrong dkey",
                                    e.offset
                                );
                            }
                            None => assert_eq!(f.key.as_bytes().len(), 1),
                        }
                        assert!(!r.overlaps(e.offset, e.offset + e.len));
                        r.insert(e.offset, e.offset + e.len);
                        for i in 0..e.len {
                            got.push((f.key.as_bytes()[0], e.offset + i, e.addr + i));
                        }
                    }
                }
                let mut want: Vec<(u8, u64, u64)> = Vec::new();
                for p in &pairs {
                    for i in 0..p.len {
                        want.push((p.key.as_bytes()[0], p.offset + i, p.addr + i));
                    }
                }
                got.sort_unstable();
                want.sort_unstable();
                assert!(got == want, "{policy:?}: the folds do not cover the descriptors byte for byte");
            }
            assert_eq!(plan(&pairs, sized(u64::MAX)).unwrap(), plan(&pairs, PK).unwrap());
        }
    }

    #[test]
    fn chunks_cut_values_at_multiples_of_the_chunk() {
        // Named round two groups, as a chunked container on two targets names them.
        const S: ChunkNames = ChunkNames::Spread { groups: 2 };
        // One 8 MiB value in 4 MiB chunks: two RPCs, on the key and on its chunk 1.
        let folds = plan(&chunk(vec![pair("k", 1 << 30, 0, 8 * MIB)], 4 * MIB, S), sized(8 * MIB)).unwrap();
        assert_eq!(folds.len(), 2);
        assert_eq!(folds[0].key, key("k"));
        assert_eq!(folds[0].extents, vec![Extent { offset: 0, len: 4 * MIB, addr: 1 << 30 }]);
        assert_eq!(folds[1].key, key("k").chunk(1, S));
        assert_eq!(folds[1].extents, vec![Extent { offset: 4 * MIB, len: 4 * MIB, addr: (1 << 30) + 4 * MIB }]);
        // Two 40 MiB keys of 1 MiB layers (apart in memory): 10 chunks of 4 layers each, one
        // RPC per chunk, whatever the policy folds (fold=true too: a fold never crosses a chunk).
        for policy in [PK, sized(8 * MIB)] {
            let folds = plan(&chunk(kv(2, 40, MIB), 4 * MIB, S), policy).unwrap();
            assert_eq!(folds.len(), 20, "{policy:?}");
            assert!(folds.iter().all(|f| f.extents.len() == 4 && f.bytes() == 4 * MIB));
            assert!(folds.iter().any(|f| f.key == key("blk1").chunk(9, S)));
        }
        // Values within the first chunk keep the unchunked layout: the same pairs, the same plan.
        let small = kv(3, 64, 4 * KIB);
        assert_eq!(plan(&chunk(small.clone(), 4 * MIB, S), PK).unwrap(), plan(&small, PK).unwrap());
        // A descriptor across a boundary, not at offset 0: split at the boundary only.
        let c = chunk(vec![pair("k", 100, 3 * MIB, 2 * MIB)], 4 * MIB, S);
        assert_eq!(c.len(), 2);
        assert_eq!((c[0].offset, c[0].len, c[0].addr, &c[0].key), (3 * MIB, MIB, 100, &key("k")));
        assert_eq!((c[1].offset, c[1].len, c[1].addr, &c[1].key), (4 * MIB, MIB, 100 + MIB, &key("k").chunk(1, S)));
        // Chunk 0 (off): untouched.
        assert_eq!(chunk(vec![pair("k", 0, 0, 8 * MIB)], 0, S).len(), 1);
        // A descriptor past the largest record index: left whole, and refused by plan with its key.
        let far = chunk(vec![pair("k", 0, u64::MAX - 10, 100)], 4 * MIB, S);
        assert_eq!((far.len(), &far[0].key), (1, &key("k")));
        assert!(plan(&far, PK).is_err());
    }
}
