//! How many bytes to evict, from the pool's space: a pure function, tested on its own.
//!
//! The rule: keep at least `keep_free` of the pool free. Bytes this engine punched within the
//! reclaim window count as free already, because DAOS gives punched space back only once it
//! has aggregated it (measured on the real engine, see the README): without that credit every
//! check inside the window would see the pool still full and evict again, emptying the cache.
//! Past the window the credit lapses, so a pool whose space did not come back is evicted
//! further.

/// Bytes evicted beyond the deficit, so that one pass buys room for a while (share of total).
pub const HYSTERESIS: f64 = 0.01;
/// What a write refused for space (`DER_NOSPACE`) evicts at least (share of total), once per
/// check, unless that much is already waiting to be reclaimed.
pub const URGENT_SHARE: f64 = 0.02;
/// Pending (punched, not yet reclaimed) bytes beyond which a refused write evicts nothing more:
/// the room is coming, and evicting more would only empty the cache (share of total).
pub const URGENT_PENDING_CAP: f64 = 0.25;

/// Bytes to evict now. `total`, `free`: the pool's bounding medium; `credit`: bytes punched
/// within the reclaim window; `keep_free`: share to keep free (0-1); `urgent`: a write was just
/// refused for space.
pub fn to_evict(total: u64, free: u64, credit: u64, keep_free: f64, urgent: bool) -> u64 {
    if total == 0 {
        return 0;
    }
    let t = total as f64;
    let have = free.saturating_add(credit).min(total) as f64;
    let deficit = (keep_free * t - have).max(0.0);
    let mut want = if deficit > 0.0 { deficit + HYSTERESIS * t } else { 0.0 };
    if urgent && (credit as f64) < URGENT_PENDING_CAP * t {
        want = want.max(URGENT_SHARE * t);
    }
    want.min(t) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    #[test]
    fn evicts_the_deficit_plus_hysteresis() {
        // 10 GiB pool, keep 10% free: at 5% free, evict 5% + 1%.
        let t = 10 * GIB;
        let got = to_evict(t, t / 20, 0, 0.10, false);
        assert!((got as f64 - 0.06 * t as f64).abs() < 2.0, "{got}");
        assert_eq!(to_evict(t, t / 10, 0, 0.10, false), 0, "at the target: nothing");
        assert_eq!(to_evict(t, t / 2, 0, 0.10, false), 0);
    }

    #[test]
    fn punched_bytes_count_as_free_within_the_window() {
        let t = 10 * GIB;
        assert_eq!(to_evict(t, 0, t / 10, 0.10, false), 0, "the punched tenth is coming back");
        assert!(to_evict(t, 0, t / 20, 0.10, false) > 0, "half of it is not enough");
    }

    #[test]
    fn a_refused_write_evicts_at_least_the_urgent_share_unless_much_is_pending() {
        let t = 10 * GIB;
        let got = to_evict(t, t / 2, 0, 0.10, true);
        assert!((got as f64 - URGENT_SHARE * t as f64).abs() < 2.0, "{got}");
        assert_eq!(to_evict(t, t / 2, t / 2, 0.10, true), 0, "half the pool is pending reclaim");
        assert_eq!(to_evict(0, 0, 0, 0.10, true), 0, "no space reported");
        assert_eq!(to_evict(t, 0, 0, 1.0, false), t, "never more than the pool");
        assert_eq!(to_evict(t, 0, 0, 0.0, false), 0, "keep_free 0 never evicts for space");
    }
}
