// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//! How a NIXL OBJ registration names its DAOS dkey, and how a chunked container names the
//! dkeys of a key's later chunks.

use std::sync::Arc;

/// What a chunk's dkey appends to its key's bytes: a NUL byte, this tag and the chunk's index
/// in decimal. Keys holding `\0nixl-daos.` are refused (`ObjectKey::check_reserved`), so no
/// key a caller registers can name another key's chunk.
const CHUNK_TAG: &[u8] = b"\0nixl-daos.chunk.";
/// The reserved part of the dkey space, a prefix of `CHUNK_TAG`.
const RESERVED: &[u8] = b"\0nixl-daos.";

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

    /// The dkey of chunk `index` of this key in a chunked container (`crate::planner::chunk`):
    /// the key itself for chunk 0, so a value within one chunk is laid out as in an unchunked
    /// container.
    pub fn chunk(&self, index: u64) -> ObjectKey {
        if index == 0 {
            return self.clone();
        }
        let mut b = Vec::with_capacity(self.0.len() + CHUNK_TAG.len() + 20);
        b.extend_from_slice(&self.0);
        b.extend_from_slice(CHUNK_TAG);
        b.extend_from_slice(index.to_string().as_bytes());
        ObjectKey(b.into())
    }

    /// Where a chunk's dkey has its tag, and the chunk's index; None for any other key.
    fn split(&self) -> Option<(usize, u64)> {
        let at = self.0.windows(CHUNK_TAG.len()).position(|w| w == CHUNK_TAG)?;
        let index = std::str::from_utf8(&self.0[at + CHUNK_TAG.len()..]).ok()?.parse().ok()?;
        Some((at, index))
    }

    /// The chunk this dkey holds: 0 for a key itself, N for `key\0nixl-daos.chunk.N`.
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

    #[test]
    fn chunk_keys_are_the_key_then_reserved_bytes() {
        let k = ObjectKey::from_registration(b"blk7", 0);
        assert_eq!(k.chunk(0), k);
        assert_eq!(k.chunk(1).as_bytes(), b"blk7\0nixl-daos.chunk.1");
        assert_eq!(k.chunk(12).as_bytes(), b"blk7\0nixl-daos.chunk.12");
        assert_eq!(k.chunk(12).base(), k);
        assert_eq!((k.chunk(12).chunk_index(), k.chunk_index()), (12, 0));
        assert_eq!(k.chunk(3).display(), "blk7 (chunk 3)");
        assert_eq!(k.base(), k);
        // A key ending in a NUL byte still finds its base (the tag has its NUL first).
        let nul = ObjectKey::from_registration(b"x\0", 0);
        assert_eq!(nul.chunk(2).base(), nul);
        assert!(k.check_reserved().is_ok());
        // Every chunk's dkey but the first is refused as a key of its own, so a caller cannot
        // register it and read or overwrite another key's chunk.
        let err = ObjectKey::from_registration(b"blk7\0nixl-daos.x", 0).check_reserved().unwrap_err();
        assert!(err.contains("byte 4") && err.contains("blk7"), "{err}");
        assert!(k.chunk(3).check_reserved().is_err());
        assert!(ObjectKey::from_registration(b"a\0nixl-daos.other", 0).check_reserved().is_err());
        // A NUL byte alone, or the tag without its NUL, is any other key.
        assert!(ObjectKey::from_registration(b"a\0b", 0).check_reserved().is_ok());
        assert!(ObjectKey::from_registration(b"nixl-daos.chunk.1", 0).check_reserved().is_ok());
    }
}
