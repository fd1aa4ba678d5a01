// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//! The eviction index as it lies in DAOS: its dkeys and akeys, and the encoding of its values.
//! Pure: no I/O.
//!
//! The index is a second object beside the keys' object (same class, `lo` + 1). Its dkeys:
//! - `seg/<n, 16 hex digits>`: segment `n`, written by one engine only (its writer): akey
//!   `owner` (a `Claim`: the writer and when it claimed the segment, taken with
//!   `DAOS_COND_DKEY_INSERT` so two writers never share a number), akeys `b00`..`b63` (one
//!   batch of `Record`s each, written once), and `evict` (a `Claim` by the engine evicting it,
//!   taken with `DAOS_COND_AKEY_INSERT`).
//! - `tail` and `head` (akey `n`, a little-endian u64): hints of the newest segment claimed and
//!   the oldest one not yet evicted. Written blindly; readers only start their search there.
//!
//! Segment numbers grow with time, so the oldest segment holds the oldest writes of every
//! engine that shares the container.

use crate::key::ObjectKey;

/// Batches per segment (akeys `b00`..`b63`).
pub const SEG_BATCHES: usize = 64;
pub const TAIL_DKEY: &[u8] = b"tail";
pub const HEAD_DKEY: &[u8] = b"head";
pub const HINT_AKEY: &[u8] = b"n";
pub const OWNER_AKEY: &[u8] = b"owner";
pub const EVICT_AKEY: &[u8] = b"evict";
/// The ledger: one slot per engine (by its id, modulo `LEDGER_SLOTS`; two engines in one slot
/// overwrite each other, which only makes each see less of the other), holding a `LedgerEntry`.
pub const LEDGER_DKEY: &[u8] = b"ledger";
pub const LEDGER_SLOTS: usize = 64;
/// First byte of an encoded batch: the format's version.
const BATCH_V1: u8 = 1;

pub fn seg_dkey(n: u64) -> Vec<u8> {
    format!("seg/{n:016x}").into_bytes()
}

pub fn batch_akey(k: usize) -> Vec<u8> {
    format!("b{k:02}").into_bytes()
}

pub fn ledger_akey(slot: usize) -> Vec<u8> {
    format!("l{slot:02}").into_bytes()
}

/// One engine's view, shared with the others: the bytes it punched within the reclaim window
/// (space about to come back), the bytes it expects to write within one window, and when.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LedgerEntry {
    pub who: u64,
    pub at_ms: u64,
    pub credit: u64,
    pub demand: u64,
}

impl LedgerEntry {
    pub fn to_bytes(self) -> [u8; 32] {
        let mut b = [0u8; 32];
        for (i, v) in [self.who, self.at_ms, self.credit, self.demand].into_iter().enumerate() {
            b[i * 8..i * 8 + 8].copy_from_slice(&v.to_le_bytes());
        }
        b
    }

    pub fn from_bytes(b: &[u8]) -> Option<LedgerEntry> {
        if b.len() != 32 {
            return None;
        }
        let w = |i: usize| u64::from_le_bytes(b[i * 8..i * 8 + 8].try_into().unwrap());
        Some(LedgerEntry { who: w(0), at_ms: w(1), credit: w(2), demand: w(3) })
    }

    /// Whether the entry was written within `window_ms` of `now_ms`, before or after: one dated
    /// further ahead (a clock far off, or bytes no engine wrote) is stale, not fresh for ever
    /// (it would hold its credit, up to the whole pool, over every engine's eviction).
    pub fn fresh(&self, now_ms: u64, window_ms: u64) -> bool {
        now_ms.abs_diff(self.at_ms) <= window_ms
    }
}

/// One key write as the index keeps it: the key, the id of the write (what the key's `gen`
/// akey then holds) and its bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    pub key: ObjectKey,
    pub id: u64,
    pub bytes: u64,
}

impl Record {
    /// Bytes it takes in a batch.
    pub fn encoded_len(&self) -> usize {
        4 + 8 + 8 + self.key.as_bytes().len()
    }
}

/// `[version][ (u32 key length, u64 id, u64 bytes, key) ... ]`, little endian.
pub fn encode(records: &[Record]) -> Vec<u8> {
    let mut out = Vec::with_capacity(1 + records.iter().map(Record::encoded_len).sum::<usize>());
    out.push(BATCH_V1);
    for r in records {
        let k = r.key.as_bytes();
        out.extend_from_slice(&(k.len() as u32).to_le_bytes());
        out.extend_from_slice(&r.id.to_le_bytes());
        out.extend_from_slice(&r.bytes.to_le_bytes());
        out.extend_from_slice(k);
    }
    out
}

/// Decodes a batch; Err names what is wrong (a batch this version cannot read is skipped by
/// the evictor, never guessed at).
pub fn decode(buf: &[u8]) -> Result<Vec<Record>, String> {
    let Some((&v, mut rest)) = buf.split_first() else { return Err("empty batch".into()) };
    if v != BATCH_V1 {
        return Err(format!("batch format {v}, this plugin reads {BATCH_V1}"));
    }
    let mut out = Vec::new();
    while !rest.is_empty() {
        if rest.len() < 20 {
            return Err(format!("truncated record header ({} bytes left)", rest.len()));
        }
        let len = u32::from_le_bytes(rest[..4].try_into().unwrap()) as usize;
        let id = u64::from_le_bytes(rest[4..12].try_into().unwrap());
        let bytes = u64::from_le_bytes(rest[12..20].try_into().unwrap());
        rest = &rest[20..];
        if len == 0 || len > rest.len() {
            return Err(format!("record key length {len} with {} bytes left", rest.len()));
        }
        out.push(Record { key: ObjectKey::from_registration(&rest[..len], 0), id, bytes });
        rest = &rest[len..];
    }
    Ok(out)
}

/// Who holds a segment (its writer, or its evictor) and since when (Unix ms).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Claim {
    pub who: u64,
    pub at_ms: u64,
}

impl Claim {
    pub fn to_bytes(self) -> [u8; 16] {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&self.who.to_le_bytes());
        b[8..].copy_from_slice(&self.at_ms.to_le_bytes());
        b
    }

    pub fn from_bytes(b: &[u8]) -> Option<Claim> {
        let b: &[u8; 16] = b.try_into().ok()?;
        Some(Claim {
            who: u64::from_le_bytes(b[..8].try_into().unwrap()),
            at_ms: u64::from_le_bytes(b[8..].try_into().unwrap()),
        })
    }

    /// Whether the claim was taken less than `lease_ms` from `now_ms`, before or after: one
    /// dated further ahead is as lapsed as an old one, not held for ever (a segment no engine
    /// could then evict, and the head stuck below it).
    pub fn within(&self, now_ms: u64, lease_ms: u64) -> bool {
        now_ms.abs_diff(self.at_ms) < lease_ms
    }
}

pub fn u64_from(b: &[u8]) -> Option<u64> {
    Some(u64::from_le_bytes(b.try_into().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_round_trip_and_bad_ones_are_refused() {
        let recs = vec![
            Record { key: ObjectKey::from_registration(b"chunk/0001", 0), id: 7, bytes: 8 << 20 },
            Record { key: ObjectKey::from_registration(b"", 42), id: u64::MAX, bytes: 0 },
        ];
        let enc = encode(&recs);
        assert_eq!(enc.len(), 1 + recs.iter().map(Record::encoded_len).sum::<usize>());
        assert_eq!(decode(&enc).unwrap(), recs);
        assert_eq!(decode(&encode(&[])).unwrap(), vec![]);
        assert!(decode(&[]).is_err());
        assert!(decode(&[9]).unwrap_err().contains("format 9"));
        assert!(decode(&enc[..enc.len() - 1]).is_err(), "a cut key is refused");
        assert!(decode(&enc[..10]).is_err(), "a cut header is refused");
        let mut zero = enc.clone();
        zero[1..5].copy_from_slice(&0u32.to_le_bytes());
        assert!(decode(&zero).is_err(), "an empty key is refused");
    }

    #[test]
    fn names_sort_by_number() {
        assert_eq!(seg_dkey(0x1f), b"seg/000000000000001f");
        assert!(seg_dkey(9) < seg_dkey(10) && seg_dkey(255) < seg_dkey(256));
        assert_eq!(batch_akey(3), b"b03");
        assert_eq!(batch_akey(SEG_BATCHES - 1), b"b63");
        let c = Claim { who: 5, at_ms: 1_700_000_000_000 };
        assert_eq!(Claim::from_bytes(&c.to_bytes()), Some(c));
        assert_eq!(Claim::from_bytes(&[0; 15]), None);
        assert_eq!(u64_from(&9u64.to_le_bytes()), Some(9));
        let l = LedgerEntry { who: 1, at_ms: 2, credit: 3 << 40, demand: u64::MAX };
        assert_eq!(LedgerEntry::from_bytes(&l.to_bytes()), Some(l));
        assert_eq!(LedgerEntry::from_bytes(&[0; 31]), None);
        assert_eq!(ledger_akey(7), b"l07");
    }
}

/// What another writer to the container could have left in the index (it needs no more than
/// the rights the plugin has), decoded: never a panic, every batch either refused with a
/// message or read exactly as its bytes say.
///
/// What a record may name: the evictor punches a record's key only in the keys' object (its
/// `keys` handle; the index object's own dkeys are punched only by segment number), and only
/// while that dkey's value record (`crate::record`) still names the record's write id. So a
/// record reaches no other object or container whatever its bytes; what the parser itself must
/// ensure, checked here, is that a key is exactly the non-empty bytes the batch holds for it
/// (nothing read past the batch or made up) and that nothing of the batch is skipped.
#[cfg(test)]
mod props {
    use proptest::prelude::*;

    use super::*;

    fn records() -> impl Strategy<Value = Vec<Record>> {
        let key = prop_oneof![
            proptest::collection::vec(any::<u8>(), 1..48).prop_map(|k| ObjectKey::from_registration(&k, 0)),
            any::<u64>().prop_map(|dev| ObjectKey::from_registration(b"", dev)),
            (proptest::collection::vec(any::<u8>(), 1..16), 1u64..1000)
                .prop_map(|(k, i)| ObjectKey::from_registration(&k, 0).chunk(i, crate::key::ChunkNames::Plain)),
        ];
        proptest::collection::vec(
            (key, any::<u64>(), any::<u64>()).prop_map(|(key, id, bytes)| Record { key, id, bytes }),
            0..8,
        )
    }

    /// A batch as the plugin writes one, then cut, grown, or with bytes changed: most of the
    /// inputs reach past the version byte and the first header.
    fn batches() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            proptest::collection::vec(any::<u8>(), 0..160),
            proptest::collection::vec(any::<u8>(), 0..160).prop_map(|b| [&[BATCH_V1][..], &b].concat()),
            (records(), any::<usize>()).prop_map(|(r, cut)| {
                let b = encode(&r);
                b[..cut % (b.len() + 1)].to_vec()
            }),
            (records(), proptest::collection::vec((any::<usize>(), any::<u8>()), 1..4)).prop_map(|(r, edits)| {
                let mut b = encode(&r);
                for (at, v) in edits {
                    let at = at % b.len();
                    b[at] = v;
                }
                b
            }),
            (records(), proptest::collection::vec(any::<u8>(), 1..24))
                .prop_map(|(r, tail)| [encode(&r), tail].concat()),
        ]
    }

    proptest! {
        #![proptest_config(crate::fuzz(2048))]

        #[test]
        fn any_batch_is_refused_with_a_reason_or_read_exactly(b in batches()) {
            match decode(&b) {
                Ok(recs) => {
                    // Every byte accounted for, in order: the keys are the batch's own bytes.
                    prop_assert_eq!(encode(&recs), b);
                    for r in &recs {
                        prop_assert!(!r.key.as_bytes().is_empty());
                    }
                }
                Err(e) => prop_assert!(!e.is_empty()),
            }
        }

        #[test]
        fn batches_round_trip(recs in records()) {
            let b = encode(&recs);
            prop_assert_eq!(b.len(), 1 + recs.iter().map(Record::encoded_len).sum::<usize>());
            prop_assert_eq!(decode(&b).unwrap(), recs.clone());
            // A cut batch gives fewer records (cut at a record's end) or an error, never another.
            for cut in 1..b.len() {
                if let Ok(got) = decode(&b[..cut]) {
                    prop_assert!(got.len() < recs.len() && recs[..got.len()] == got[..], "cut at {}", cut);
                }
            }
        }

        #[test]
        fn ledger_entries_and_claims_read_only_their_own_size(
            b in proptest::collection::vec(any::<u8>(), 0..40),
            now in any::<u64>(),
            window in any::<u64>(),
        ) {
            match LedgerEntry::from_bytes(&b) {
                Some(e) => {
                    prop_assert_eq!(b.len(), 32);
                    prop_assert_eq!(&e.to_bytes()[..], &b[..]);
                    // Fresh only near `now`, on either side: never for ever.
                    prop_assert_eq!(e.fresh(now, window), e.at_ms.abs_diff(now) <= window);
                }
                None => prop_assert_ne!(b.len(), 32),
            }
            match Claim::from_bytes(&b) {
                Some(c) => {
                    prop_assert_eq!(b.len(), 16);
                    prop_assert_eq!(&c.to_bytes()[..], &b[..]);
                    prop_assert_eq!(c.within(now, window), c.at_ms.abs_diff(now) < window);
                }
                None => prop_assert_ne!(b.len(), 16),
            }
            prop_assert_eq!(u64_from(&b).is_some(), b.len() == 8);
        }
    }

    #[test]
    fn entries_dated_ahead_lapse() {
        let now = 1_700_000_000_000u64;
        let ahead = LedgerEntry { who: 1, at_ms: u64::MAX, credit: u64::MAX, demand: u64::MAX };
        assert!(!ahead.fresh(now, 45_000), "an entry dated in the far future is stale");
        assert!(LedgerEntry { at_ms: now + 2_000, ..ahead }.fresh(now, 45_000), "a clock 2 s ahead");
        assert!(LedgerEntry { at_ms: now - 2_000, ..ahead }.fresh(now, 45_000));
        let claim = Claim { who: 2, at_ms: u64::MAX };
        assert!(!claim.within(now, 120_000), "a claim dated in the far future is lapsed");
        assert!(Claim { who: 2, at_ms: now + 1_000 }.within(now, 120_000));
        assert!(!Claim { who: 2, at_ms: now - 120_000 }.within(now, 120_000));
    }
}
