//! How many bytes to evict, from the pool's space: a pure function, tested on its own.
//!
//! The rule: keep at least `keep_free` of the pool free. Bytes this engine punched within the
//! reclaim window count as free already, because DAOS gives punched space back only once it
//! has aggregated it (measured on the real engine, see the README): without that credit every
//! check inside the window would see the pool still full and evict again, emptying the cache.
//! Past the window the credit lapses, so a pool whose space did not come back is evicted
//! further.
//!
//! The share kept free also follows the writes: what the engine writes during one reclaim
//! window must fit into what is free, or writes wait for space until the punched bytes come
//! back. So the room kept is the larger of `keep_free` and the recent write rate times the
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

/// This engine's part of `need` (what all engines on the container must evict): in proportion
/// to its demand (who writes more frees more), or an equal part of `engines` when nobody writes.
pub fn share(need: u64, mine: u64, all: u64, engines: usize) -> u64 {
    if need == 0 {
        return 0;
    }
    if all == 0 {
        return need.div_ceil(engines.max(1) as u64);
    }
    ((need as f64) * (mine as f64 / all as f64)).ceil() as u64
}

/// The recent write rate, bytes per second: follows a rise at once and decays slowly
/// (`DECAY` per second), so a pause between bursts does not forget the burst.
#[derive(Clone, Copy, Debug, Default)]
pub struct Rate {
    per_s: f64,
}

impl Rate {
    pub const DECAY: f64 = 0.97;

    /// `bytes` written over the last `secs`.
    pub fn sample(&mut self, bytes: u64, secs: f64) {
        if secs <= 0.0 {
            return;
        }
        let now = bytes as f64 / secs;
        self.per_s = now.max(self.per_s * Self::DECAY.powf(secs));
    }

    /// Bytes expected over `secs` at this rate.
    pub fn over(&self, secs: f64) -> u64 {
        (self.per_s * secs) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(share(100, 1, 4, 2), 25, "a quarter of the writes: a quarter of the eviction");
        assert_eq!(share(100, 0, 4, 2), 0, "an idle engine leaves it to the writers");
        assert_eq!(share(100, 0, 0, 3), 34, "nobody writes (a refusal): equal parts, rounded up");
        assert_eq!(share(100, 5, 5, 1), 100, "alone");
        assert_eq!(share(0, 5, 5, 1), 0);
    }

    #[test]
    fn the_rate_rises_at_once_and_decays_slowly() {
        let mut r = Rate::default();
        r.sample(100 << 20, 1.0);
        assert_eq!(r.over(1.0), 100 << 20);
        r.sample(0, 10.0);
        let left = r.over(1.0) as f64 / (100 << 20) as f64;
        assert!((left - Rate::DECAY.powf(10.0)).abs() < 1e-6, "{left}");
        r.sample(1 << 30, 1.0);
        assert_eq!(r.over(1.0), 1 << 30);
        r.sample(5, 0.0);
        assert_eq!(r.over(1.0), 1 << 30, "an empty interval changes nothing");
    }

    #[test]
    fn evicts_the_deficit_plus_hysteresis() {
        // 10 GiB pool, keep 10% free: at 5% free, evict 5% + 1%.
        let t = 10 * GIB;
        let got = to_evict(t, t / 20, 0, 0.10, 0, false);
        assert!((got as f64 - 0.06 * t as f64).abs() < 2.0, "{got}");
        assert_eq!(to_evict(t, t / 10, 0, 0.10, 0, false), 0, "at the target: nothing");
        assert_eq!(to_evict(t, t / 2, 0, 0.10, 0, false), 0);
    }

    #[test]
    fn punched_bytes_count_as_free_within_the_window() {
        let t = 10 * GIB;
        assert_eq!(to_evict(t, 0, t / 10, 0.10, 0, false), 0, "the punched tenth is coming back");
        assert!(to_evict(t, 0, t / 20, 0.10, 0, false) > 0, "half of it is not enough");
    }

    #[test]
    fn a_refused_write_evicts_at_least_the_urgent_share_unless_much_is_pending() {
        let t = 10 * GIB;
        let got = to_evict(t, t / 2, 0, 0.10, 0, true);
        assert!((got as f64 - URGENT_SHARE * t as f64).abs() < 2.0, "{got}");
        assert_eq!(to_evict(t, t / 2, t / 2, 0.10, 0, true), 0, "half the pool is pending reclaim");
        assert_eq!(to_evict(0, 0, 0, 0.10, 0, true), 0, "no space reported");
        assert_eq!(to_evict(t, 0, 0, 1.0, 0, false), t, "never more than the pool");
        assert_eq!(to_evict(t, 0, 0, 0.0, 0, false), 0, "keep_free 0 never evicts for space");
    }
}
