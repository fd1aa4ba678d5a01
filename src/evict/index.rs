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
