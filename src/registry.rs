// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//! The live OBJ registrations of one engine, by devId, to refuse a registration that would make
//! NIXL's routing ambiguous.
//!
//! NIXL's agent does not hand a transfer descriptor to the registration it was meant for: it
//! finds a registration with the same devId whose range covers it (for OBJ the range is the
//! offsets inside the key), and passes that one's metadata. Two live registrations of one devId
//! over overlapping ranges with different keys are both accepted by the agent, and a transfer
//! then goes to whichever it finds first: measured with the 1.5.1 wheel, devId 777 registered
//! for key A and then for key B, a WRITE meant for B landed in A and reported success, and a
//! READ "of B" would return A's bytes as B's. LMCache before its fix for the OBJ devId race
//! (it numbered every batch's devIds from 0, so a background PUT and a GET overlapped) is such a
//! caller. The engine cannot tell which key a descriptor means, so it refuses the second
//! registration, naming both keys: a failed registration is a miss the caller sees; a misrouted
//! transfer is wrong bytes marked as success.
//!
//! The same key registered twice on one devId, or keys on one devId over disjoint ranges (the
//! agent tells those apart), stay allowed. A registration leaves the registry when it is
//! dropped (deregisterMem), through a weak reference: no engine pointer is needed then, so a
//! registration that outlives its engine is still freed safely.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use crate::error::{Error, Result};
use crate::key::ObjectKey;

#[derive(Debug)]
struct Entry {
    id: u64,
    start: u64,
    /// The last offset covered (inclusive: a range reaching `u64::MAX` stays non-empty).
    last: u64,
    key: ObjectKey,
}

type Table = Mutex<HashMap<u64, Vec<Entry>>>;

#[derive(Default)]
pub struct Registry {
    table: Arc<Table>,
    next_id: AtomicU64,
}

/// One OBJ registration (NIXL's backend metadata for it): the key, copied, and its place in the
/// registry, released on drop.
#[derive(Debug)]
pub struct Registration {
    pub key: ObjectKey,
    /// Held for its drop, which takes the registration out of the registry.
    _ticket: Option<Ticket>,
}

#[derive(Debug)]
struct Ticket {
    table: Weak<Table>,
    dev_id: u64,
    id: u64,
}

impl Registration {
    /// A registration outside any registry (tests that build requests by hand).
    pub fn detached(key: ObjectKey) -> Registration {
        Registration { key, _ticket: None }
    }
}

/// [start, last] of a registration: the first and last offsets it covers, inclusive, so that a
/// range at the end of the offsets (`u64::MAX`, length 1, or one cut there) is not read as empty
/// and let past another key's. NIXL's agent takes a zero-length registration as one with no range
/// limit (it stores it as reaching the end of the address space), so it covers every offset from
/// `addr` on; so does this.
fn range(addr: u64, len: u64) -> (u64, u64) {
    if len == 0 {
        (addr, u64::MAX)
    } else {
        (addr, addr.saturating_add(len - 1))
    }
}

fn lock(t: &Table) -> std::sync::MutexGuard<'_, HashMap<u64, Vec<Entry>>> {
    // The table holds plain data, consistent after any panic: a poisoned lock is still usable.
    t.lock().unwrap_or_else(|p| p.into_inner())
}

impl Registry {
    pub fn register(&self, dev_id: u64, addr: u64, len: u64, key: ObjectKey) -> Result<Registration> {
        let (start, last) = range(addr, len);
        let mut table = lock(&self.table);
        let live = table.entry(dev_id).or_default();
        if let Some(other) = live.iter().find(|e| e.key != key && e.start <= last && start <= e.last) {
            return Err(Error::InvalidArg(format!(
                "OBJ devId {dev_id} at offsets {start} to {last} for key {:?} overlaps the live registration of key {:?} \
                 on the same devId at offsets {} to {}: NIXL routes a transfer by devId and offset, so a transfer meant for one \
                 key could move the other's bytes; give each key its own devId, or deregister the other key first",
                key.display(),
                other.key.display(),
                other.start,
                other.last
            )));
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        live.push(Entry { id, start, last, key: key.clone() });
        Ok(Registration { key, _ticket: Some(Ticket { table: Arc::downgrade(&self.table), dev_id, id }) })
    }

    #[cfg(test)]
    fn live(&self) -> usize {
        lock(&self.table).values().map(Vec::len).sum()
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let Some(table) = self.table.upgrade() else { return };
        let mut table = lock(&table);
        if let Some(live) = table.get_mut(&self.dev_id) {
            live.retain(|e| e.id != self.id);
            if live.is_empty() {
                table.remove(&self.dev_id);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(s: &str) -> ObjectKey {
        ObjectKey::from_registration(s.as_bytes(), 0)
    }

    #[test]
    fn another_key_on_an_overlapping_range_of_a_live_devid_is_refused() {
        let r = Registry::default();
        let a = r.register(7, 0, 4096, key("A")).unwrap();
        let e = r.register(7, 0, 4096, key("B")).unwrap_err().to_string();
        assert!(e.contains("devId 7") && e.contains("\"A\"") && e.contains("\"B\"") && e.contains("own devId"), "{e}");
        // Partial overlap, either side.
        assert!(r.register(7, 4095, 10, key("B")).is_err());
        assert!(r.register(7, 0, 1, key("B")).is_err());
        drop(a);
        // Once A is deregistered, B may take the devId.
        let _b = r.register(7, 0, 4096, key("B")).unwrap();
        assert_eq!(r.live(), 1);
    }

    #[test]
    fn same_key_disjoint_ranges_and_other_devids_are_allowed() {
        let r = Registry::default();
        let a1 = r.register(7, 0, 4096, key("A")).unwrap();
        let a2 = r.register(7, 0, 8192, key("A")).unwrap();
        let b = r.register(7, 8192, 4096, key("B")).unwrap();
        let c = r.register(8, 0, 4096, key("C")).unwrap();
        assert_eq!(r.live(), 4);
        drop((a1, a2, b, c));
        assert_eq!(r.live(), 0);
        // A zero-length registration reaches to the end (as NIXL's agent takes it): it collides
        // with any other key's range from its offset on, not with ranges before it.
        let _e = r.register(10, 4096, 0, key("E")).unwrap();
        assert!(r.register(10, 8192, 4096, key("F")).is_err());
        assert!(r.register(10, 1 << 40, 1, key("F")).is_err());
        let _f = r.register(10, 0, 4096, key("F")).unwrap();
        assert!(r.register(10, 0, 0, key("G")).is_err());
    }

    #[test]
    fn ranges_at_the_end_of_the_offsets_are_not_empty() {
        let r = Registry::default();
        let _a = r.register(11, 0, 0, key("A")).unwrap(); // to the end
                                                          // The last offset alone, and a range cut at the end, still overlap A's.
        assert!(r.register(11, u64::MAX, 1, key("B")).is_err());
        assert!(r.register(11, u64::MAX - 4, 10, key("B")).is_err());
        let _c = r.register(12, u64::MAX, 1, key("C")).unwrap();
        assert!(r.register(12, 1, u64::MAX, key("D")).is_err());
        let _d = r.register(12, 0, u64::MAX, key("D")).unwrap(); // [0, u64::MAX - 1]
    }

    #[test]
    fn a_registration_outliving_its_registry_drops_cleanly() {
        let r = Registry::default();
        let a = r.register(1, 0, 10, key("A")).unwrap();
        drop(r);
        drop(a);
        let d = Registration::detached(key("X"));
        assert_eq!(d.key, key("X"));
    }
}

/// Registrations of any devIds, offsets and lengths (NIXL passes them through unchecked, up to
/// u64::MAX), registered and dropped in any order: never a panic, and at no time two live
/// registrations of one devId with different keys over overlapping ranges.
#[cfg(test)]
mod props {
    use proptest::prelude::*;

    use super::*;

    fn offset() -> impl Strategy<Value = u64> {
        prop_oneof![0u64..64, Just(u64::MAX), Just(u64::MAX - 1), Just(1 << 63), any::<u64>()]
    }

    proptest! {
        #![proptest_config(crate::fuzz(512))]

        #[test]
        fn live_registrations_never_overlap_across_keys(
            ops in proptest::collection::vec((0u64..3, offset(), offset(), 0u8..3, any::<bool>(), any::<usize>()), 1..40),
        ) {
            let r = Registry::default();
            // What the test holds: (devId, [start, end) in exact arithmetic, key, registration).
            let mut live: Vec<(u64, (u128, u128), ObjectKey, Registration)> = Vec::new();
            for (dev, addr, len, key, drop_one, which) in ops {
                if drop_one && !live.is_empty() {
                    live.swap_remove(which % live.len());
                    continue;
                }
                let key = ObjectKey::from_registration(&[b'k', key], 0);
                // NIXL's view, without overflow: offsets run to 2^64, and a zero length reaches
                // there.
                let start = u128::from(addr);
                let end = if len == 0 { 1u128 << 64 } else { (start + u128::from(len)).min(1 << 64) };
                let clash = live.iter().any(|(d, (s, e), k, _)| *d == dev && *k != key && *s < end && start < *e);
                match r.register(dev, addr, len, key.clone()) {
                    Ok(reg) => {
                        prop_assert!(!clash, "devId {} [{}, {}) accepted over another key's range", dev, start, end);
                        live.push((dev, (start, end), key, reg));
                    }
                    Err(e) => {
                        prop_assert!(clash, "refused without a clash: {}", e);
                        let named = format!("devId {dev}");
                        prop_assert!(e.to_string().contains(&named));
                    }
                }
                prop_assert_eq!(r.live(), live.len());
            }
            drop(live);
            prop_assert_eq!(r.live(), 0);
        }
    }
}
