//! The planner: turns a NIXL transfer (local DRAM descriptors paired with OBJ descriptors)
//! into `Fold`s, each one DAOS RPC on one key. Pure: no I/O, no DAOS.
//!
//! With folding on, all descriptors of a request that target the same key become one fold
//! (one iod with many recxs, one sgl with many iovs); neighbours contiguous on both sides
//! merge into one extent, and a fold's extents are listed in offset order (DAOS reports a read
//! past the written end only as trimmed tail holes, see `plan`). A fold is split only where DAOS requires
//! it: recxs of one iod must not overlap, and a fold keeps at most `MAX_EXTENTS_PER_FOLD`
//! extents so its descriptors stay well inside one eager RPC (DAOS_FACTS §3).

use std::collections::{BTreeMap, HashMap};

use crate::daos::io::Extent;
use crate::error::{Error, Result};
use crate::key::ObjectKey;

pub const MAX_EXTENTS_PER_FOLD: usize = 1024;

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
    slots: Vec<(usize, Ranges)>,
}

impl<'a> OpenFolds<'a> {
    fn get(&mut self, key: &'a ObjectKey) -> Option<&mut (usize, Ranges)> {
        let slot = match self.last {
            Some((k, slot)) if k == key => slot,
            _ => *self.by_key.get(key)?,
        };
        self.last = Some((key, slot));
        Some(&mut self.slots[slot])
    }

    fn open(&mut self, key: &'a ObjectKey, fold: usize, ranges: Ranges) {
        let slot = self.slots.len();
        self.slots.push((fold, ranges));
        self.by_key.insert(key, slot);
        self.last = Some((key, slot));
    }
}

pub fn plan(pairs: &[Pair], fold: bool) -> Result<Vec<Fold>> {
    let mut folds: Vec<Fold> = Vec::new();
    let mut open = OpenFolds::default();
    for p in pairs {
        if p.len == 0 {
            continue;
        }
        let end = p.offset.checked_add(p.len).filter(|&e| e <= i64::MAX as u64).ok_or_else(|| {
            Error::InvalidArg(format!(
                "descriptor of key {:?} at offset {} with length {} runs past the largest DAOS record index",
                p.key.display(),
                p.offset,
                p.len
            ))
        })?;
        let ext = Extent { offset: p.offset, len: p.len, addr: p.addr };
        if !fold {
            folds.push(Fold { key: p.key.clone(), extents: vec![ext] });
            continue;
        }
        if let Some((idx, ranges)) = open.get(&p.key) {
            if !ranges.overlaps(p.offset, end) {
                let f = &mut folds[*idx];
                let last = f.extents.last_mut().expect("open folds are never empty");
                if last.offset + last.len == p.offset && last.addr + last.len == p.addr {
                    // Contiguous in the object and in memory: grow the last extent.
                    ranges.insert(last.offset, end);
                    last.len += p.len;
                    continue;
                }
                if f.extents.len() < MAX_EXTENTS_PER_FOLD {
                    ranges.insert(p.offset, end);
                    f.extents.push(ext);
                    continue;
                }
            }
        }
        let mut ranges = Ranges::default();
        ranges.insert(p.offset, end);
        open.open(&p.key, folds.len(), ranges);
        folds.push(Fold { key: p.key.clone(), extents: vec![ext] });
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

#[cfg(test)]
mod tests {
    use super::*;

    fn key(s: &str) -> ObjectKey {
        ObjectKey::from_registration(s.as_bytes(), 0)
    }
    fn pair(k: &str, addr: u64, offset: u64, len: u64) -> Pair {
        Pair { addr, offset, len, key: key(k) }
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
        let folds = plan(&pairs, true).unwrap();
        assert_eq!(folds.len(), 2);
        assert_eq!(folds[0].key, key("blk0"));
        assert_eq!(folds[0].extents.len(), 40);
        assert_eq!(folds[1].bytes(), 40 * mib);
        assert_eq!(folds[1].extents[3], Extent { offset: 3 * mib, len: mib, addr: 43 * 2 * mib });

        let unfolded = plan(&pairs, false).unwrap();
        assert_eq!(unfolded.len(), 80);
        assert!(unfolded.iter().all(|f| f.extents.len() == 1));
    }

    #[test]
    fn contiguous_neighbours_merge() {
        let pairs: Vec<_> = (0..4).map(|i| pair("k", 1000 + i * 10, i * 10, 10)).collect();
        let folds = plan(&pairs, true).unwrap();
        assert_eq!(folds, vec![Fold { key: key("k"), extents: vec![Extent { offset: 0, len: 40, addr: 1000 }] }]);
    }

    #[test]
    fn interleaved_keys_keep_first_appearance_order() {
        let pairs = vec![pair("a", 0, 0, 8), pair("b", 100, 0, 8), pair("a", 200, 64, 8), pair("c", 300, 0, 8)];
        let folds = plan(&pairs, true).unwrap();
        let keys: Vec<_> = folds.iter().map(|f| f.key.display()).collect();
        assert_eq!(keys, ["a", "b", "c"]);
        assert_eq!(folds[0].extents.len(), 2);
    }

    #[test]
    fn overlapping_ranges_split_the_fold() {
        // Reading the same range into two buffers is legal; DAOS rejects overlapping recxs in
        // one iod, so the second goes into a second RPC.
        let pairs = vec![pair("k", 0, 0, 100), pair("k", 1000, 50, 100), pair("k", 5000, 400, 10)];
        let folds = plan(&pairs, true).unwrap();
        assert_eq!(folds.len(), 2);
        assert_eq!(folds[0].extents.len(), 1);
        assert_eq!(folds[1].extents.len(), 2);
    }

    #[test]
    fn a_fold_lists_its_extents_in_offset_order() {
        let pairs = vec![pair("k", 9000, 500, 10), pair("k", 1000, 0, 10), pair("k", 5000, 100, 10)];
        let folds = plan(&pairs, true).unwrap();
        assert_eq!(folds.len(), 1);
        let got: Vec<_> = folds[0].extents.iter().map(|e| (e.offset, e.addr)).collect();
        assert_eq!(got, [(0, 1000), (100, 5000), (500, 9000)], "each extent keeps its buffer");
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
    fn large_requests_split_at_the_extent_cap() {
        let pairs: Vec<_> = (0..(MAX_EXTENTS_PER_FOLD as u64 + 5)).map(|i| pair("k", i * 20, i * 10, 5)).collect();
        let folds = plan(&pairs, true).unwrap();
        assert_eq!(folds.len(), 2);
        assert_eq!(folds[0].extents.len(), MAX_EXTENTS_PER_FOLD);
        assert_eq!(folds[1].extents.len(), 5);
    }

    #[test]
    fn zero_length_skipped_and_overflow_rejected() {
        let folds = plan(&[pair("k", 0, 0, 0)], true).unwrap();
        assert!(folds.is_empty());
        let e = plan(&[pair("k", 0, u64::MAX - 1, 10)], true).unwrap_err();
        assert!(e.to_string().contains("offset"), "{e}");
    }

    /// Property: for any input, every byte of every descriptor is covered exactly once, at the
    /// same (offset, addr) correspondence, and no fold holds overlapping ranges.
    #[test]
    fn folding_preserves_every_byte() {
        let mut seed = 0x1234_5678_u64;
        let mut rnd = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        for _ in 0..300 {
            let n = 1 + rnd(60);
            let pairs: Vec<Pair> = (0..n)
                .map(|_| pair(["a", "b", "c"][rnd(3) as usize], rnd(1 << 20), rnd(4096), 1 + rnd(64)))
                .collect();
            for fold in [true, false] {
                let folds = plan(&pairs, fold).unwrap();
                let mut got: Vec<(String, u64, u64)> = Vec::new();
                for f in &folds {
                    assert!(f.extents.is_sorted_by_key(|e| e.offset), "a fold's extents are in offset order");
                    let mut r = Ranges::default();
                    for e in &f.extents {
                        assert!(!r.overlaps(e.offset, e.offset + e.len));
                        r.insert(e.offset, e.offset + e.len);
                        for i in 0..e.len {
                            got.push((f.key.display(), e.offset + i, e.addr + i));
                        }
                    }
                }
                let mut want: Vec<(String, u64, u64)> = Vec::new();
                for p in &pairs {
                    for i in 0..p.len {
                        want.push((p.key.display(), p.offset + i, p.addr + i));
                    }
                }
                got.sort();
                want.sort();
                assert_eq!(got, want);
            }
        }
    }
}
