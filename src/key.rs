// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//! How a NIXL OBJ registration names its DAOS dkey, and how a chunked container names the
//! dkeys of a key's later chunks (placed on other redundancy groups than the chunks beside them,
//! `ChunkNames::Spread`).

use std::sync::Arc;

/// What a chunk's dkey appends to its key's bytes: a NUL byte, this tag and the chunk's index
/// in decimal. Keys holding `\0nixl-daos.` are refused (`ObjectKey::check_reserved`), so no
/// key a caller registers can name another key's chunk.
const CHUNK_TAG: &[u8] = b"\0nixl-daos.chunk.";
/// The reserved part of the dkey space, a prefix of `CHUNK_TAG`.
const RESERVED: &[u8] = b"\0nixl-daos.";

/// How a chunked container names the dkeys of a key's chunks past the first (recorded with its
/// layout: `crate::engine::Layout`). Every name is the key, `CHUNK_TAG` and the chunk's index;
/// `Spread` may append `.` and a salt. A reader must name chunks as their writer did, so both
/// rules stay as they are for good: a new rule is a new layout record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChunkNames {
    /// The tag and the index only. DAOS hashes each dkey to a redundancy group, so two chunks
    /// of a value share a group (one target) as often as chance has it: half the time for two
    /// chunks on two groups.
    Plain,
    /// Chunk N on group (g + N) mod `groups`, where g is the key's own group: the first salt
    /// (0, no suffix; then `.1`, `.2`, ...) whose name DAOS hashes there (`group`), or the
    /// plain name if none of `SALTS_PER_GROUP` x `groups` does. So the chunks of a value go
    /// round the object's groups and a lone request has every target at work. Only the
    /// placement depends on DAOS's hash; the names depend on this code alone, so a DAOS that
    /// hashed otherwise would read and write the same dkeys, only less spread. Objects of more
    /// than `MAX_SPREAD_GROUPS` groups keep plain names: the search would cost more than
    /// chance collisions there (under 1 in 64 for two chunks).
    Spread { groups: u32 },
}

impl ChunkNames {
    /// The groups chunks are named round, or None where names are plain: `Plain`, and objects of
    /// one group or of more than `MAX_SPREAD_GROUPS` (`ObjectKey::chunk`).
    pub fn spread_groups(self) -> Option<u32> {
        match self {
            ChunkNames::Spread { groups } if (2..=MAX_SPREAD_GROUPS).contains(&groups) => Some(groups),
            _ => None,
        }
    }
}

/// Most groups `ChunkNames::Spread` places chunks over.
const MAX_SPREAD_GROUPS: u32 = 64;
/// Salts tried per group before a chunk keeps its plain name (e^-8, 1 in 3000, of chunks).
const SALTS_PER_GROUP: u32 = 8;
// The names of chunks already written depend on both (which salt is tried, up to which group
// count names are salted at all): a reader with other values would look for chunks under other
// names than their writer's. A change to either is a new naming rule, so a new layout record.
const _: () = assert!(SALTS_PER_GROUP == 8 && MAX_SPREAD_GROUPS == 64, "chunk names depend on these; see above");
/// DAOS's seed for the murmur hash of a dkey (`obj_dkey2hash`, DAOS 2.x).
const DKEY_HASH_SEED: u32 = 5731;

/// The redundancy group of `groups` that DAOS 2.x places `dkey` on in an object of hashed
/// dkeys: MurmurHash64A of the dkey's bytes, then jump consistent hashing over the groups.
pub fn group(dkey: &[u8], groups: u32) -> u32 {
    jump(murmur64a(dkey, DKEY_HASH_SEED), groups)
}

/// MurmurHash64A (Austin Appleby, public domain), little-endian words, as DAOS's
/// `d_hash_murmur64`.
fn murmur64a(data: &[u8], seed: u32) -> u64 {
    const M: u64 = 0xc6a4_a793_5bd1_e995;
    const R: u32 = 47;
    let mut h = u64::from(seed) ^ (data.len() as u64).wrapping_mul(M);
    let mut words = data.chunks_exact(8);
    for w in &mut words {
        let mut k = u64::from_le_bytes(w.try_into().expect("8 bytes"));
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h ^= k;
        h = h.wrapping_mul(M);
    }
    let tail = words.remainder();
    if !tail.is_empty() {
        for (i, &b) in tail.iter().enumerate() {
            h ^= u64::from(b) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^= h >> R;
    h
}

/// Jump consistent hash (Lamping and Veach, 2014), as DAOS's `d_hash_jump`: the bucket of
/// `buckets` for `key`.
fn jump(mut key: u64, buckets: u32) -> u32 {
    let (mut b, mut j) = (-1i64, 0i64);
    while j < i64::from(buckets) {
        b = j;
        key = key.wrapping_mul(2_862_933_555_777_941_757).wrapping_add(1);
        j = ((b + 1) as f64 * ((1u64 << 31) as f64 / ((key >> 33) + 1) as f64)) as i64;
    }
    b.max(0) as u32
}

/// Appends `n` in decimal (as `to_string`, without allocating: it runs once per salt tried).
fn push_decimal(b: &mut Vec<u8>, mut n: u32) {
    let mut digits = [0u8; 10];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    b.extend_from_slice(&digits[at..]);
}

/// The bytes of one NIXL key, used as the DAOS dkey. Cheap to clone: requests copy it at
/// prep time so the registration may be deregistered while I/O is in flight.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ObjectKey(Arc<[u8]>);

impl ObjectKey {
    /// NIXL's rule (as in its OBJ plugin): `metaInfo`, or the decimal `devId` when empty. The one
    /// implementation of it: registerMem and queryMem (through the C ABI) both come here.
    pub fn from_registration(meta: &[u8], dev_id: u64) -> ObjectKey {
        if meta.is_empty() {
            ObjectKey(dev_id.to_string().into_bytes().into())
        } else {
            ObjectKey(meta.into())
        }
    }

    /// The dkey of chunk `index` of this key in a chunked container (`crate::planner::chunk`),
    /// named by `names`: the key itself for chunk 0, so a value within one chunk is laid out as
    /// in an unchunked container.
    pub fn chunk(&self, index: u64, names: ChunkNames) -> ObjectKey {
        if index == 0 {
            return self.clone();
        }
        let mut b = Vec::with_capacity(self.0.len() + CHUNK_TAG.len() + 32);
        b.extend_from_slice(&self.0);
        b.extend_from_slice(CHUNK_TAG);
        b.extend_from_slice(index.to_string().as_bytes());
        let Some(groups) = names.spread_groups() else {
            return ObjectKey(b.into());
        };
        let want = ((u64::from(group(&self.0, groups)) + index) % u64::from(groups)) as u32;
        let plain = b.len();
        for salt in 0..SALTS_PER_GROUP * groups {
            if salt > 0 {
                b.truncate(plain);
                b.push(b'.');
                push_decimal(&mut b, salt);
            }
            if group(&b, groups) == want {
                return ObjectKey(b.into());
            }
        }
        b.truncate(plain);
        ObjectKey(b.into())
    }

    /// Where a chunk's dkey has its tag, and the chunk's index (before any salt); None for any
    /// other key.
    fn split(&self) -> Option<(usize, u64)> {
        let at = self.0.windows(CHUNK_TAG.len()).position(|w| w == CHUNK_TAG)?;
        let tail = std::str::from_utf8(&self.0[at + CHUNK_TAG.len()..]).ok()?;
        let index = tail.split_once('.').map_or(tail, |(index, _salt)| index).parse().ok()?;
        Some((at, index))
    }

    /// The chunk this dkey holds: 0 for a key itself, N for `key\0nixl-daos.chunk.N[.salt]`.
    pub fn chunk_index(&self) -> u64 {
        self.split().map_or(0, |(_, n)| n)
    }

    /// The key a chunk's dkey belongs to (itself for a key's chunk 0, or any key that is not a
    /// chunk's dkey).
    pub fn base(&self) -> ObjectKey {
        match self.split() {
            Some((at, _)) => ObjectKey(self.0[..at].into()),
            None => self.clone(),
        }
    }

    /// Refuses a key inside the dkey space the plugin keeps for chunks (it holds
    /// `\0nixl-daos.`): such a key could name another key's chunk and read or overwrite it.
    pub fn check_reserved(&self) -> Result<(), String> {
        match self.0.windows(RESERVED.len()).position(|w| w == RESERVED) {
            None => Ok(()),
            Some(at) => Err(format!(
                "key {:?} holds the bytes \"\\0nixl-daos.\" at byte {at}, which nixl-daos keeps for the dkeys of a \
                 key's chunks; use a key without a NUL byte",
                self.display()
            )),
        }
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// For logs and error messages: a chunk's dkey as its key and the chunk's index.
    pub fn display(&self) -> String {
        match self.split() {
            None => String::from_utf8_lossy(&self.0).into_owned(),
            Some((at, n)) => format!("{} (chunk {n})", String::from_utf8_lossy(&self.0[..at])),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meta_wins_dev_id_fallback() {
        assert_eq!(ObjectKey::from_registration(b"obj_1_abcd", 7).as_bytes(), b"obj_1_abcd");
        assert_eq!(ObjectKey::from_registration(b"", 12345).as_bytes(), b"12345");
        assert_eq!(ObjectKey::from_registration(b"", u64::MAX).display(), "18446744073709551615");
        assert_eq!(ObjectKey::from_registration(b"", 0).as_bytes(), b"0");
    }

    const P: ChunkNames = ChunkNames::Plain;

    #[test]
    fn dkey_groups_are_daos_2_8_s() {
        // Computed with DAOS 2.8.0's libgurt (d_hash_murmur64 seed 5731, then d_hash_jump over
        // 1, 2, 3, 8, 64 and 1000 buckets): a change here moves every spread chunk.
        let cases: [(&[u8], u64, [u32; 6]); 6] = [
            (b"", 0xf81377e08c41d2b9, [0, 0, 0, 7, 26, 83]),
            (b"a", 0x429febda385898af, [0, 1, 1, 4, 56, 230]),
            (b"blk7", 0x2ee5137dd20ed1ed, [0, 0, 2, 2, 26, 282]),
            (b"obj_1_abcd", 0x8b1cc77731a4152a, [0, 0, 0, 5, 5, 186]),
            (b"blk7\0nixl-daos.chunk.1", 0xbe0f5160f977a51b, [0, 1, 2, 3, 15, 126]),
            (b"0123456789abcdef0123", 0x9fe684881703fa43, [0, 1, 2, 5, 20, 826]),
        ];
        for (dkey, hash, groups) in cases {
            assert_eq!(murmur64a(dkey, DKEY_HASH_SEED), hash, "{dkey:?}");
            for (n, want) in [1, 2, 3, 8, 64, 1000].into_iter().zip(groups) {
                assert_eq!(group(dkey, n), want, "{dkey:?} over {n}");
            }
        }
    }

    #[test]
    fn spread_chunks_go_round_the_groups() {
        let mut salted = 0;
        for groups in [2u32, 3, 8, 64] {
            for k in 0..200u64 {
                let key = ObjectKey::from_registration(format!("kv/{k}/{groups}").as_bytes(), 0);
                let names = ChunkNames::Spread { groups };
                let g0 = group(key.as_bytes(), groups);
                let mut seen = std::collections::HashSet::new();
                for index in 0..12u64 {
                    let d = key.chunk(index, names);
                    // The same name every time (a reader finds what the writer wrote) ...
                    assert_eq!(d, key.chunk(index, names));
                    // ... on the group after the previous chunk's ...
                    let want = ((u64::from(g0) + index) % u64::from(groups)) as u32;
                    assert_eq!(group(d.as_bytes(), groups), want, "{:?} chunk {index} over {groups}", key.display());
                    // ... that parses back to its key and index, and names no other chunk.
                    assert_eq!((d.base(), d.chunk_index()), (key.clone(), index));
                    assert_eq!(
                        d.display(),
                        if index == 0 { key.display() } else { format!("{} (chunk {index})", key.display()) }
                    );
                    assert!(seen.insert(d.clone()));
                    salted += usize::from(d != key.chunk(index, P));
                }
            }
        }
        assert!(salted > 0);
        // The names themselves, for good: a reader finds a chunk only under its writer's name.
        for (key, groups, want) in [
            ("blk7", 2, ["1", "2.1", "3.2", "4"]),
            ("blk7", 8, ["1", "2.13", "3.14", "4.20"]),
            ("lmcache@m@00ff", 64, ["1.120", "2.19", "3.129", "4.43"]),
        ] {
            let k = ObjectKey::from_registration(key.as_bytes(), 0);
            for (index, want) in (1..).zip(want) {
                let name = [key.as_bytes(), CHUNK_TAG, want.as_bytes()].concat();
                assert_eq!(k.chunk(index, ChunkNames::Spread { groups }).as_bytes(), name, "{key} over {groups}");
            }
        }
        // One group, or more than 64: plain names (literal counts, not the constant: raising it
        // would rename the chunks of objects of 65 groups and more).
        let k = ObjectKey::from_registration(b"blk7", 0);
        for groups in [0, 1, 65, 128] {
            assert_eq!(k.chunk(5, ChunkNames::Spread { groups }), k.chunk(5, P));
        }
        assert_eq!(k.chunk(4, ChunkNames::Spread { groups: 64 }).as_bytes(), b"blk7\0nixl-daos.chunk.4.158");
        // No salt of 16 places chunk 1 of "fb73588" on its group of 2 (found by search, about 1
        // chunk in 65,000): it keeps its plain name, for good.
        let fb = ObjectKey::from_registration(b"fb73588", 0);
        assert_eq!(fb.chunk(1, ChunkNames::Spread { groups: 2 }), fb.chunk(1, P));
        let want = (group(fb.as_bytes(), 2) + 1) % 2;
        assert_ne!(group(fb.chunk(1, P).as_bytes(), 2), want);
        // Salted names are in the reserved space too (a salted one: every chunk name has a '.').
        let d = (1..40)
            .map(|i| (k.chunk(i, ChunkNames::Spread { groups: 8 }), k.chunk(i, P)))
            .find(|(spread, plain)| spread != plain)
            .map(|(spread, _)| spread)
            .unwrap();
        assert!(d.check_reserved().is_err(), "{}", d.display());
    }

    #[test]
    fn chunk_names_of_different_keys_never_meet() {
        // Keys that are prefixes of each other, or end in part of the tag, or in a NUL byte.
        let keys: Vec<&[u8]> = vec![b"a", b"a.", b"a.1", b"a\0", b"a\0nixl-dao", b"a\0nixl-daos", b"a1", b"1", b""];
        let mut seen = std::collections::HashMap::new();
        for names in [P, ChunkNames::Spread { groups: 2 }, ChunkNames::Spread { groups: 8 }] {
            seen.clear();
            for &key in &keys {
                let k = ObjectKey(key.into());
                for index in 0..40u64 {
                    let d = k.chunk(index, names);
                    assert_eq!((d.base(), d.chunk_index()), (k.clone(), index), "{:?} chunk {index}", k.display());
                    if let Some(other) = seen.insert(d.clone(), (key, index)) {
                        panic!("{:?} chunk {index} and {other:?} share the dkey {:?}", k.display(), d.display());
                    }
                }
            }
        }
    }

    #[test]
    fn chunk_keys_are_the_key_then_reserved_bytes() {
        let k = ObjectKey::from_registration(b"blk7", 0);
        assert_eq!(k.chunk(0, P), k);
        assert_eq!(k.chunk(1, P).as_bytes(), b"blk7\0nixl-daos.chunk.1");
        assert_eq!(k.chunk(12, P).as_bytes(), b"blk7\0nixl-daos.chunk.12");
        assert_eq!(k.chunk(12, P).base(), k);
        assert_eq!((k.chunk(12, P).chunk_index(), k.chunk_index()), (12, 0));
        assert_eq!(k.chunk(3, P).display(), "blk7 (chunk 3)");
        assert_eq!(k.base(), k);
        // A key ending in a NUL byte still finds its base (the tag has its NUL first).
        let nul = ObjectKey::from_registration(b"x\0", 0);
        assert_eq!(nul.chunk(2, P).base(), nul);
        assert!(k.check_reserved().is_ok());
        // Every chunk's dkey but the first is refused as a key of its own, so a caller cannot
        // register it and read or overwrite another key's chunk.
        let err = ObjectKey::from_registration(b"blk7\0nixl-daos.x", 0).check_reserved().unwrap_err();
        assert!(err.contains("byte 4") && err.contains("blk7"), "{err}");
        assert!(k.chunk(3, P).check_reserved().is_err());
        assert!(ObjectKey::from_registration(b"a\0nixl-daos.other", 0).check_reserved().is_err());
        // A NUL byte alone, or the tag without its NUL, is any other key.
        assert!(ObjectKey::from_registration(b"a\0b", 0).check_reserved().is_ok());
        assert!(ObjectKey::from_registration(b"nixl-daos.chunk.1", 0).check_reserved().is_ok());
    }
}

/// Keys as a caller may pass them (metaInfo is any bytes: NUL, non-UTF-8, the reserved tag,
/// empty) and dkeys as the index or a listing may hand them back: never a panic, and the
/// chunks of a key a caller may register name that key and no other.
#[cfg(test)]
mod props {
    use proptest::prelude::*;

    use super::*;

    /// Bytes rich in the tag's pieces, so that the chunk parsing meets near misses.
    fn keyish() -> impl Strategy<Value = Vec<u8>> {
        let piece = prop_oneof![
            proptest::collection::vec(any::<u8>(), 0..6),
            Just(CHUNK_TAG.to_vec()),
            Just(RESERVED.to_vec()),
            Just(b"\0".to_vec()),
            Just(b".".to_vec()),
            (0u64..u64::MAX).prop_map(|n| n.to_string().into_bytes()),
            Just(b"+7".to_vec()),
            Just("\u{ff}\u{2603}".as_bytes().to_vec()),
        ];
        proptest::collection::vec(piece, 0..6).prop_map(|p| p.concat())
    }

    fn names() -> impl Strategy<Value = ChunkNames> {
        prop_oneof![Just(ChunkNames::Plain), (0u32..80).prop_map(|groups| ChunkNames::Spread { groups })]
    }

    proptest! {
        #![proptest_config(crate::fuzz(1024))]

        #[test]
        fn any_key_bytes_parse_without_panic(meta in keyish(), dev in any::<u64>(), groups in 0u32..100) {
            let k = ObjectKey::from_registration(&meta, dev);
            // NIXL's rule: metaInfo, or the decimal devId; never an empty dkey (DAOS refuses one).
            prop_assert!(!k.as_bytes().is_empty());
            if !meta.is_empty() {
                prop_assert_eq!(k.as_bytes(), &meta[..]);
            }
            let _ = (k.chunk_index(), k.display(), group(k.as_bytes(), groups));
            let base = k.base();
            prop_assert!(k.as_bytes().starts_with(base.as_bytes()));
            // Refused exactly when it holds the reserved bytes.
            let reserved = k.as_bytes().windows(RESERVED.len()).any(|w| w == RESERVED);
            prop_assert_eq!(k.check_reserved().is_err(), reserved);
            if !reserved {
                prop_assert_eq!((base, k.chunk_index()), (k.clone(), 0));
            }
        }

        #[test]
        fn a_registrable_keys_chunks_name_it_alone(mut meta in keyish(), index in 0u64..10_000, names in names()) {
            if ObjectKey::from_registration(&meta, 0).check_reserved().is_err() {
                meta.retain(|&b| b != 0); // what a caller may register: no reserved bytes
            }
            let k = ObjectKey::from_registration(&meta, 0);
            prop_assert!(k.check_reserved().is_ok());
            let d = k.chunk(index, names);
            prop_assert_eq!(d.clone(), k.chunk(index, names), "the same name every time");
            prop_assert_eq!((d.base(), d.chunk_index()), (k.clone(), index));
            // A later chunk's dkey is in the reserved space: no caller can register it.
            prop_assert_eq!(d.check_reserved().is_err(), index > 0);
        }
    }
}
