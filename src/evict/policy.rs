// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//! How many bytes to evict, from the pool's space: a pure function, tested on its own.
//!
//! The rule: keep at least `keep_free` of the pool free. Bytes this engine punched within the
//! reclaim window count as free already, because DAOS gives punched space back only once it
//! has aggregated it (measured on the real engine, see docs/operations.md): without that credit every
//! check inside the window would see the pool still full and evict again, emptying the cache.
//! Past the window the credit lapses, so a pool whose space did not come back is evicted
//! further.
//!
//! The share kept free also follows the writes: what the engines write during one reclaim
//! window must fit into what is free, or writes wait for space until the punched bytes come
//! back. So the room kept is the larger of `keep_free` and what was written over the last
//! window (capped at `MAX_HEADROOM`, so a burst cannot empty the cache).

/// Bytes evicted beyond the deficit, so that one pass buys room for a while (share of total).
pub const HYSTERESIS: f64 = 0.01;
/// What a write refused for space (`DER_NOSPACE`) evicts at least (share of total), once per
/// check, unless that much is already waiting to be reclaimed.
pub const URGENT_SHARE: f64 = 0.02;
/// Pending (punched, not yet reclaimed) bytes beyond which a refused write evicts nothing more:
/// the room is coming, and evicting more would only empty the cache (share of total).
pub const URGENT_PENDING_CAP: f64 = 0.25;

/// Most of the pool the write-rate headroom may keep free (share of total).
pub const MAX_HEADROOM: f64 = 0.5;

/// Bytes to evict now. `total`, `free`: the pool's bounding medium; `credit`: bytes punched
/// within the reclaim window; `keep_free`: share to keep free (0-1); `demand`: bytes the engine
/// is expected to write during one reclaim window (its recent rate times the window);
/// `urgent`: a write was just refused for space.
pub fn to_evict(total: u64, free: u64, credit: u64, keep_free: f64, demand: u64, urgent: bool) -> u64 {
    if total == 0 {
        return 0;
    }
    let t = total as f64;
    let keep = (keep_free * t).max((demand as f64).min(MAX_HEADROOM * t));
    let have = free.saturating_add(credit).min(total) as f64;
    let deficit = (keep - have).max(0.0);
    let mut want = if deficit > 0.0 { deficit + HYSTERESIS * t } else { 0.0 };
    if urgent && (credit as f64) < URGENT_PENDING_CAP * t {
        want = want.max(URGENT_SHARE * t);
    }
    want.min(t) as u64
}

/// How long an engine waits between space checks after `quiet` checks in a row found it with
/// nothing to do (no bytes written, no reclaim pending, nothing to evict): the base interval,
/// doubled per quiet check up to `max`. Each check is a pool query and a ledger read and write;
/// a DAOS engine busy-polls its network for seconds after any RPC (measured on DAOS 2.8 over
/// ofi+tcp: about 2 cores of a 2-core machine for 6-9 s after a client's last RPC), so a check
/// every second kept an idle client's engine spinning forever, and a colocated vLLM's prefill
/// ran 2.7x slower. A write, a refusal or eviction work resets it (the caller sets quiet to 0).
pub fn check_interval(base: std::time::Duration, quiet: u32, max: std::time::Duration) -> std::time::Duration {
    base.saturating_mul(1u32 << quiet.min(16)).min(max.max(base))
}

/// This engine's part of `need` (what all engines on the container must evict): in proportion
/// to its demand (who writes more frees more), or an equal part of `engines` when nobody writes.
/// An engine whose write was just refused (`urgent`) takes at least an equal part, whatever its
/// demand: its writes must not wait for engines that see no shortage.
pub fn share(need: u64, mine: u64, all: u64, engines: usize, urgent: bool) -> u64 {
    if need == 0 {
        return 0;
    }
    let equal = need.div_ceil(engines.max(1) as u64);
    if all == 0 {
        return equal;
    }
    let by_demand = ((need as f64) * (mine as f64 / all as f64)).ceil() as u64;
    if urgent {
        by_demand.max(equal)
    } else {
        by_demand
    }
}

/// The bytes written over the last window (a sliding sum of per-check samples): what the next
/// window is expected to write. A sum, not a peak rate: the backlog of writes that waited for
/// space completes within one check once space comes back, and a rate taken then would keep
/// half the pool free for nothing.
#[derive(Clone, Debug, Default)]
pub struct Demand {
    samples: std::collections::VecDeque<(std::time::Instant, u64)>,
}

impl Demand {
    /// `bytes` written since the last sample.
    pub fn sample(&mut self, bytes: u64, window: std::time::Duration) {
        if window.is_zero() {
            // No reclaim delay: nothing written needs room kept for it.
            self.samples.clear();
            return;
        }
        let now = std::time::Instant::now();
        self.samples.push_back((now, bytes));
        while self.samples.front().is_some_and(|(t, _)| now.duration_since(*t) > window) {
            self.samples.pop_front();
        }
    }

    pub fn bytes(&self) -> u64 {
        self.samples.iter().map(|(_, b)| b).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quiet_checks_back_off_to_the_cap_and_never_below_the_base() {
        let (s, ms) = (std::time::Duration::from_secs, std::time::Duration::from_millis);
        assert_eq!(check_interval(s(1), 0, s(30)), s(1));
        assert_eq!(check_interval(s(1), 1, s(30)), s(2));
        assert_eq!(check_interval(s(1), 4, s(30)), s(16));
        assert_eq!(check_interval(s(1), 5, s(30)), s(30));
        assert_eq!(check_interval(s(1), u32::MAX, s(30)), s(30));
        assert_eq!(check_interval(ms(1500), 3, s(1)), ms(1500)); // a cap below the base: the base
    }

    const GIB: u64 = 1 << 30;

    #[test]
    fn the_write_rate_sets_the_room_kept_free() {
        let t = 10 * GIB;
        // 1 GiB expected per reclaim window at 50% free: nothing to do; at 5% free: evict to
        // 1 GiB (10%) ... or to the demand, when it is larger than keep_free.
        assert_eq!(to_evict(t, t / 2, 0, 0.10, GIB, false), 0);
        let got = to_evict(t, t / 20, 0, 0.05, 3 * GIB, false);
        let want = 3.0 * GIB as f64 - (t / 20) as f64 + HYSTERESIS * t as f64;
        assert!((got as f64 - want).abs() < 2.0, "{got} vs {want}");
        // A demand beyond the pool keeps only MAX_HEADROOM free.
        let got = to_evict(t, 0, 0, 0.10, 100 * GIB, false);
        let want = (MAX_HEADROOM + HYSTERESIS) * t as f64;
        assert!((got as f64 - want).abs() < 2.0, "{got} vs {want}");
    }

    #[test]
    fn engines_share_the_eviction_by_demand() {
        assert_eq!(share(100, 1, 4, 2, false), 25, "a quarter of the writes: a quarter of the eviction");
        assert_eq!(share(100, 0, 4, 2, false), 0, "an idle engine leaves it to the writers");
        assert_eq!(share(100, 0, 4, 2, true), 50, "unless its own write was just refused");
        assert_eq!(share(100, 3, 4, 2, true), 75);
        assert_eq!(share(100, 0, 0, 3, false), 34, "nobody writes: equal parts, rounded up");
        assert_eq!(share(100, 5, 5, 1, false), 100, "alone");
        assert_eq!(share(0, 5, 5, 1, true), 0);
    }

    #[test]
    fn demand_is_what_the_last_window_wrote() {
        let mut d = Demand::default();
        let w = std::time::Duration::from_millis(50);
        d.sample(10, w);
        d.sample(20, w);
        assert_eq!(d.bytes(), 30);
        std::thread::sleep(std::time::Duration::from_millis(80));
        d.sample(5, w);
        assert_eq!(d.bytes(), 5, "samples older than the window are gone");
        d.sample(7, std::time::Duration::ZERO);
        assert_eq!(d.bytes(), 0, "no window, no demand");
    }
}
