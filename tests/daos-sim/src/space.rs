// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//! Pool space: a capacity per pool, the bytes its objects hold, and the delay with which
//! punched bytes come back (real DAOS returns them only when aggregation has run).
//!
//! Off by default (capacity 0: unlimited, and `daos_pool_query` reports a large free space), so
//! the rest of the simulator behaves as before. With a capacity, an update that would take the
//! pool past it fails with `-DER_NOSPACE` and writes nothing, as a full DAOS target does.
//!
//! What it counts: the bytes held by the akeys an update touches, before and after (an
//! overwrite in place costs nothing here, where real DAOS keeps the old version until it
//! aggregates; so a real pool fills sooner under overwrites than this model says). A punched
//! dkey's bytes stay counted for `reclaim_ms`, then come back.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// Capacity applied to every pool, in bytes (0: unlimited); `DAOS_SIM_POOL_BYTES`, control
/// `capacity <bytes>`.
static CAPACITY: AtomicU64 = AtomicU64::new(0);
/// How long punched bytes stay counted; `DAOS_SIM_RECLAIM_MS`, control `reclaim_ms <ms>`.
static RECLAIM_MS: AtomicU64 = AtomicU64::new(0);

/// What `daos_pool_query` reports as the total of an unlimited pool.
pub const UNLIMITED_TOTAL: u64 = 1 << 50;

pub fn set_capacity(bytes: u64) {
    CAPACITY.store(bytes, Relaxed);
}

pub fn set_reclaim_ms(ms: u64) {
    RECLAIM_MS.store(ms, Relaxed);
}

pub fn describe() -> String {
    match CAPACITY.load(Relaxed) {
        0 => "unlimited".into(),
        c => format!("{c} bytes per pool, punched bytes back after {} ms", RECLAIM_MS.load(Relaxed)),
    }
}

/// One pool's space.
#[derive(Default)]
pub struct Space {
    used: AtomicU64,
    /// Punched bytes not yet given back: (when they come back, bytes).
    pending: Mutex<VecDeque<(Instant, u64)>>,
}

impl Space {
    /// Gives back the punched bytes whose delay has passed.
    fn reclaim(&self) {
        let now = Instant::now();
        let mut p = self.pending.lock();
        while let Some(&(at, n)) = p.front() {
            if at > now {
                break;
            }
            p.pop_front();
            self.used.fetch_sub(n.min(self.used.load(Relaxed)), Relaxed);
        }
    }

    /// Whether `bytes` more fit. Always true for an unlimited pool.
    pub fn fits(&self, bytes: u64) -> bool {
        let cap = CAPACITY.load(Relaxed);
        if cap == 0 {
            return true;
        }
        self.reclaim();
        self.used.load(Relaxed).saturating_add(bytes) <= cap
    }

    /// Records a change of the bytes held (an update: after - before).
    pub fn account(&self, before: u64, after: u64) {
        if after >= before {
            self.used.fetch_add(after - before, Relaxed);
        } else {
            let d = before - after;
            self.used.fetch_sub(d.min(self.used.load(Relaxed)), Relaxed);
        }
    }

    /// Bytes a punch freed: counted until `reclaim_ms` has passed.
    pub fn punched(&self, bytes: u64) {
        if bytes == 0 {
            return;
        }
        let ms = RECLAIM_MS.load(Relaxed);
        if ms == 0 {
            self.account(bytes, 0);
        } else {
            self.pending.lock().push_back((Instant::now() + Duration::from_millis(ms), bytes));
        }
    }

    /// (total, free) as `daos_pool_query` reports them.
    pub fn query(&self) -> (u64, u64) {
        self.reclaim();
        let used = self.used.load(Relaxed);
        match CAPACITY.load(Relaxed) {
            0 => (UNLIMITED_TOTAL, UNLIMITED_TOTAL.saturating_sub(used)),
            cap => (cap, cap.saturating_sub(used)),
        }
    }

    /// Everything was dropped (`reset_data`).
    pub fn clear(&self) {
        self.pending.lock().clear();
        self.used.store(0, Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // One test touches the process-wide settings, so the cases run in order inside it.
    #[test]
    fn capacity_and_delayed_reclaim() {
        let s = Space::default();
        assert!(s.fits(u64::MAX), "unlimited by default");
        set_capacity(1000);
        set_reclaim_ms(50);
        s.account(0, 900);
        assert!(s.fits(100) && !s.fits(101));
        s.punched(500);
        assert_eq!(s.query(), (1000, 100), "punched bytes stay counted until reclaimed");
        std::thread::sleep(Duration::from_millis(80));
        assert_eq!(s.query(), (1000, 600));
        assert!(s.fits(600) && !s.fits(601));
        set_reclaim_ms(0);
        s.punched(400);
        assert_eq!(s.query(), (1000, 1000));
        s.account(0, 10);
        s.clear();
        assert_eq!(s.query(), (1000, 1000));
        set_capacity(0);
        assert!(s.fits(u64::MAX));
    }
}
