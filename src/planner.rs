// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//! The planner: turns a NIXL transfer (local descriptors paired with OBJ descriptors) into
//! `Fold`s, one DAOS RPC per dkey. Pure: no I/O, no DAOS.
//!
//! Every descriptor of a request that falls in one dkey (a key, or one chunk of it in a
//! chunked container) goes into that dkey's one RPC, whatever their number, order or overlap.
//! DAOS applies one update of one dkey as a unit, so a write of a dkey is all there or not at
//! all; and since every transfer goes through a staging buffer (`crate::daos::io`), ranges
//! contiguous in the object become one extent wherever they sit in the caller's memory.
//! Overlapping descriptors of one write store the later one's bytes where they overlap. An RPC
//! whose list of extents outgrows DAOS's 20 KiB RPC body (hundreds of disjoint ranges in one
//! dkey) is still one RPC: DAOS moves the larger body by bulk transfer.
//!
//! Each fold carries its key's length in this request (the end of its highest descriptor): a
//! write records it beside the bytes (`crate::record`). Every key a request touches also gets
//! a fold of its first dkey, bytes or not: a write stores its record there, so that the key's
//! first dkey always names its newest write, and a read checks it, so that a chunk left from a
//! longer earlier write is never read as part of the newer value.

use std::collections::HashMap;

use crate::daos::io::Extent;
use crate::error::{Error, Result};
use crate::key::{ChunkNames, ObjectKey};

/// One side of a descriptor pair: local buffer `addr`, object `offset`, `len` bytes, `key`.
#[derive(Clone, Debug)]
pub struct Pair {
    pub addr: u64,
    pub offset: u64,
    pub len: u64,
    pub key: ObjectKey,
}

/// One RPC: the ranges of one dkey (none: its record alone), and its key's length.
#[derive(Clone, Debug, PartialEq)]
pub struct Fold {
    pub key: ObjectKey,
    pub extents: Vec<Extent>,
    pub value_len: u64,
}

impl Fold {
    #[cfg(test)]
    pub fn bytes(&self) -> u64 {
        self.extents.iter().map(|e| e.len).sum()
    }
}

/// The folds of a request's `pairs` in a container of `chunk`-byte chunks (0: one dkey per
/// key) named by `names`: one per dkey, in the order dkeys first appear, then a record-only
/// fold of each key's first dkey the pairs do not touch.
pub fn plan(pairs: Vec<Pair>, chunk_bytes: u64, names: ChunkNames) -> Result<Vec<Fold>> {
    let mut lens: HashMap<ObjectKey, u64> = HashMap::new();
    let mut keys: Vec<ObjectKey> = Vec::new();
    for p in &pairs {
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
        match lens.get_mut(&p.key) {
            Some(l) => *l = (*l).max(end),
            None => {
                lens.insert(p.key.clone(), end);
                keys.push(p.key.clone());
            }
        }
    }
    let mut folds: Vec<Fold> = Vec::new();
    let mut by_dkey: HashMap<ObjectKey, usize> = HashMap::new();
    // Consecutive pieces mostly hit the same dkey: compared before the map is hashed.
    let mut last: Option<(ObjectKey, usize)> = None;
    for p in chunk(pairs, chunk_bytes, names) {
        if p.len == 0 {
            continue;
        }
        let ext = Extent { offset: p.offset, len: p.len, addr: p.addr };
        let i = match &last {
            Some((k, i)) if *k == p.key => *i,
            _ => {
                let i = match by_dkey.get(&p.key) {
                    Some(&i) => i,
                    None => {
                        let value_len = lens[&p.key.base()];
                        by_dkey.insert(p.key.clone(), folds.len());
                        folds.push(Fold { key: p.key.clone(), extents: Vec::new(), value_len });
                        folds.len() - 1
                    }
                };
                last = Some((p.key.clone(), i));
                i
            }
        };
        folds[i].extents.push(ext);
    }
    for k in keys {
        if !by_dkey.contains_key(&k) {
            let value_len = lens[&k];
            folds.push(Fold { key: k, extents: Vec::new(), value_len });
        }
    }
    Ok(folds)
}

/// The pairs of a chunked container (`chunk_bytes` > 0): a pair is cut where a multiple of
/// `chunk` falls inside it, and each piece names the dkey of its chunk (`ObjectKey::chunk`:
/// the key itself for chunk 0, a dkey of its own for each later one), keeping its object
/// offset. DAOS places each dkey on a target by its hash, so one large value is written and
/// read by several targets at once; `plan` then folds each chunk's pieces as a dkey of its own,
/// so no RPC crosses a chunk. A value within the first chunk keeps the unchunked layout.
/// `chunk` 0 returns the pairs as they are. `names` is the container's naming of chunks.
fn chunk(pairs: Vec<Pair>, chunk: u64, names: ChunkNames) -> Vec<Pair> {
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

#[cfg(test)]
mod tests {
    use super::*;

    const KIB: u64 = 1024;
    const MIB: u64 = 1024 * KIB;
    const P: ChunkNames = ChunkNames::Plain;

    fn key(s: &str) -> ObjectKey {
        ObjectKey::from_registration(s.as_bytes(), 0)
    }
    fn pair(k: &str, addr: u64, offset: u64, len: u64) -> Pair {
        Pair { addr, offset, len, key: key(k) }
    }
    /// `keys` KV blocks of `layers` layers of `len` bytes, apart in memory.
    fn kv(keys: u64, layers: u64, len: u64) -> Vec<Pair> {
        (0..keys)
            .flat_map(|k| (0..layers).map(move |l| pair(&format!("blk{k}"), (k * layers + l) * 2 * len, l * len, len)))
            .collect()
    }

    #[test]
    fn one_rpc_per_key_whatever_its_descriptors() {
        // 4 keys of 64 layers of 4 KiB, apart in memory, interleaved or not: 4 RPCs.
        let folds = plan(kv(4, 64, 4 * KIB), 0, P).unwrap();
        assert_eq!(folds.len(), 4);
        assert!(folds.iter().all(|f| f.extents.len() == 64 && f.value_len == 256 * KIB));
        // Thousands of disjoint ranges (past DAOS's 20 KiB RPC body): still one RPC.
        let many: Vec<Pair> = (0..5000).map(|i| pair("k", i * 64, i * 64, 16)).collect();
        assert_eq!(plan(many, 0, P).unwrap().len(), 1);
        // Overlapping descriptors: one RPC, in descriptor order (the later one wins when staged).
        let folds = plan(vec![pair("k", 0, 0, 100), pair("k", 1000, 50, 100)], 0, P).unwrap();
        assert_eq!(folds.len(), 1);
        assert_eq!(folds[0].extents.iter().map(|e| e.addr).collect::<Vec<_>>(), vec![0, 1000]);
        assert_eq!(folds[0].value_len, 150);
        // Interleaved keys keep their first appearance's order.
        let folds = plan(vec![pair("b", 0, 0, 1), pair("a", 0, 0, 1), pair("b", 0, 1, 1)], 0, P).unwrap();
        assert_eq!(folds.iter().map(|f| f.key.clone()).collect::<Vec<_>>(), vec![key("b"), key("a")]);
    }

    #[test]
    fn zero_length_skipped_and_overflow_rejected() {
        assert!(plan(vec![pair("k", 0, 0, 0)], 0, P).unwrap().is_empty());
        let e = plan(vec![pair("k", 0, u64::MAX - 10, 100)], 0, P).unwrap_err().to_string();
        assert!(e.contains("\"k\"") && e.contains("largest DAOS record index"), "{e}");
        assert!(plan(vec![pair("k", 0, u64::MAX - 10, 100)], 4 * MIB, P).is_err());
    }

    #[test]
    fn chunks_cut_values_at_multiples_of_the_chunk() {
        // Named round two groups, as a chunked container on two targets names them.
        const S: ChunkNames = ChunkNames::Spread { groups: 2 };
        // One 8 MiB value in 4 MiB chunks: two RPCs, on the key and on its chunk 1.
        let folds = plan(vec![pair("k", 1 << 30, 0, 8 * MIB)], 4 * MIB, S).unwrap();
        assert_eq!(folds.len(), 2);
        assert_eq!(folds[0].key, key("k"));
        assert_eq!(folds[0].extents, vec![Extent { offset: 0, len: 4 * MIB, addr: 1 << 30 }]);
        assert_eq!(folds[1].key, key("k").chunk(1, S));
        assert_eq!(folds[1].extents, vec![Extent { offset: 4 * MIB, len: 4 * MIB, addr: (1 << 30) + 4 * MIB }]);
        assert!(folds.iter().all(|f| f.value_len == 8 * MIB));
        // Two 40 MiB keys of 1 MiB layers: 10 chunks of 4 layers each, one RPC per chunk.
        let folds = plan(kv(2, 40, MIB), 4 * MIB, S).unwrap();
        assert_eq!(folds.len(), 20);
        assert!(folds.iter().all(|f| f.extents.len() == 4 && f.bytes() == 4 * MIB));
        assert!(folds.iter().any(|f| f.key == key("blk1").chunk(9, S)));
        // A descriptor across a boundary, not at offset 0: split at the boundary, and the key's
        // first dkey gets its record alone.
        let folds = plan(vec![pair("k", 100, 5 * MIB, 4 * MIB)], 4 * MIB, S).unwrap();
        assert_eq!(folds.len(), 3);
        assert_eq!((folds[0].key.clone(), folds[0].bytes()), (key("k").chunk(1, S), 3 * MIB));
        assert_eq!((folds[1].key.clone(), folds[1].bytes()), (key("k").chunk(2, S), MIB));
        assert_eq!((folds[2].key.clone(), folds[2].bytes(), folds[2].value_len), (key("k"), 0, 9 * MIB));
        // Chunks off: one dkey whatever the size.
        assert_eq!(plan(vec![pair("k", 0, 0, 64 * MIB)], 0, S).unwrap().len(), 1);
    }

    #[test]
    fn chunk_cuts_pairs_at_chunk_boundaries() {
        const S: ChunkNames = ChunkNames::Spread { groups: 2 };
        let c = chunk(vec![pair("k", 100, 3 * MIB, 2 * MIB)], 4 * MIB, S);
        assert_eq!(c.len(), 2);
        assert_eq!((c[0].offset, c[0].len, c[0].addr, &c[0].key), (3 * MIB, MIB, 100, &key("k")));
        assert_eq!((c[1].offset, c[1].len, c[1].addr, &c[1].key), (4 * MIB, MIB, 100 + MIB, &key("k").chunk(1, S)));
        assert_eq!(chunk(vec![pair("k", 0, 0, 8 * MIB)], 0, S).len(), 1);
        let far = chunk(vec![pair("k", 0, u64::MAX - 10, 100)], 4 * MIB, S);
        assert_eq!((far.len(), &far[0].key), (1, &key("k")));
    }
}

/// Descriptors as a caller may pass them (NIXL checks the DRAM side against its registrations,
/// not the OBJ side's offsets): any offsets and lengths, zero-length, overlapping, past
/// `u64::MAX` and DAOS's largest index. Never a panic; refused, naming the key, exactly when a
/// descriptor reaches past DAOS's largest record index; otherwise every byte asked for goes to
/// exactly one fold, of the chunk of its own key that holds it.
#[cfg(test)]
mod props {
    use proptest::prelude::*;

    use super::*;

    fn pairs() -> impl Strategy<Value = Vec<Pair>> {
        let big = i64::MAX as u64;
        let offset = prop_oneof![0u64..(1 << 24), Just(big), Just(big - 1), Just(u64::MAX), any::<u64>()];
        let len = prop_oneof![Just(0u64), 1u64..(1 << 22), Just(1), Just(u64::MAX), Just(big), any::<u64>()];
        // A length that stays inside DAOS's index space is cut to 16 MiB at most: a real one
        // needs as much caller memory (NIXL checks the DRAM side against its registrations),
        // and the planner cuts it into that many chunks.
        let pair = (0u8..3, offset, len, any::<u64>()).prop_map(|(k, offset, len, addr)| Pair {
            addr,
            offset,
            len: match offset.checked_add(len) {
                Some(end) if end <= i64::MAX as u64 && len > 1 << 24 => len % (1 << 24),
                _ => len,
            },
            key: ObjectKey::from_registration(&[b'k', k], 0),
        });
        proptest::collection::vec(pair, 0..8)
    }

    fn layouts() -> impl Strategy<Value = (u64, ChunkNames)> {
        let names = prop_oneof![Just(ChunkNames::Plain), (0u32..70).prop_map(|groups| ChunkNames::Spread { groups })];
        (prop_oneof![Just(0u64), (16u32..=30).prop_map(|s| 1u64 << s)], names)
    }

    proptest! {
        #![proptest_config(crate::fuzz(512))]

        #[test]
        fn any_descriptors_are_planned_or_refused(pairs in pairs(), (chunk_bytes, names) in layouts()) {
            let past = pairs.iter().any(|p| p.len > 0 && p.offset.checked_add(p.len).is_none_or(|e| e > i64::MAX as u64));
            let asked: u64 = pairs.iter().map(|p| p.len).fold(0, u64::saturating_add);
            match plan(pairs.clone(), chunk_bytes, names) {
                Err(e) => {
                    prop_assert!(past, "refused: {}", e);
                    prop_assert!(e.to_string().contains("largest DAOS record index"), "{}", e);
                }
                Ok(folds) => {
                    prop_assert!(!past);
                    let mut moved = 0u64;
                    for f in &folds {
                        let base = f.key.base();
                        prop_assert!(pairs.iter().any(|p| p.key == base), "a fold of no key asked for");
                        prop_assert!(f.value_len <= i64::MAX as u64);
                        for e in &f.extents {
                            prop_assert!(e.len > 0 && e.offset + e.len <= f.value_len);
                            match e.offset.checked_div(chunk_bytes) {
                                Some(index) => {
                                    prop_assert_eq!((e.offset + e.len - 1) / chunk_bytes, index, "an extent across a chunk");
                                    prop_assert_eq!(&f.key, &base.chunk(index, names));
                                }
                                None => prop_assert_eq!(&f.key, &base), // chunks off
                            }
                            moved += e.len;
                        }
                    }
                    prop_assert_eq!(moved, asked);
                    // Every key with bytes asked has a fold of its first dkey (its record).
                    for p in pairs.iter().filter(|p| p.len > 0) {
                        prop_assert!(folds.iter().any(|f| f.key == p.key));
                    }
                }
            }
        }
    }
}
