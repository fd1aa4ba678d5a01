// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//! A fast, non-cryptographic hasher for the store's internal maps (FxHash-style: rotate, xor,
//! multiply per word). The keys are chunk indices, object ids, handle cookies and short dkeys
//! and akeys from the process itself, so there is nothing to defend against hash flooding, and
//! SipHash (std's default) showed up in profiles of small-extent I/O.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// `HashMap` with [`FxHasher`].
pub type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;

const K: u64 = 0xf135_7aea_2e62_a9c5;

#[derive(Default, Clone, Copy)]
pub struct FxHasher(u64);

impl FxHasher {
    #[inline]
    fn add(&mut self, w: u64) {
        self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(K);
    }
}

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut it = bytes.chunks_exact(8);
        for w in &mut it {
            self.add(u64::from_le_bytes(w.try_into().unwrap()));
        }
        let rest = it.remainder();
        if !rest.is_empty() {
            let mut b = [0u8; 8];
            b[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(b));
        }
    }

    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(i as u64);
    }

    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.add(i as u64);
    }

    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }

    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    /// The multiply leaves its best bits at the top; the table indexes with the low ones.
    #[inline]
    fn finish(&self) -> u64 {
        self.0.rotate_left(26)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_work_and_spread() {
        let mut m: FastMap<u64, u64> = FastMap::default();
        for i in 0..10_000u64 {
            m.insert(i << 20, i);
        }
        assert!((0..10_000u64).all(|i| m[&(i << 20)] == i));
        let mut s: FastMap<Box<[u8]>, usize> = FastMap::default();
        for i in 0..1000usize {
            s.insert(format!("key-{i}").into_bytes().into(), i);
        }
        assert_eq!(s.get(&b"key-999"[..]), Some(&999));
        assert_eq!(s.get(&b"key-1000"[..]), None);
        // Keys differing only in a trailing zero byte, or in length, still differ.
        let h = |b: &[u8]| {
            let mut x = FxHasher::default();
            std::hash::Hash::hash(b, &mut x);
            x.finish()
        };
        assert_ne!(h(b"ab"), h(b"ab\0"));
    }
}
