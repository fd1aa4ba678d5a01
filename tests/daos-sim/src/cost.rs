// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//! The cost model: when an object RPC may complete.
//!
//! One shared link (the server and the network together) serves every object RPC in the order
//! they are sent. An RPC holds it for
//!
//! ```text
//! busy = rpc_cost + bulk_cost (if the data goes by bulk) + recx_cost * recxs + bytes * copies / bandwidth
//! ```
//!
//! with the four figures chosen per operation (update or fetch; punch and query_key pay
//! fetch's `rpc_cost`), then `latency` is added, which RPCs in flight overlap:
//!
//! ```text
//! link_free_at = max(now, link_free_at) + busy
//! ready_at     = link_free_at + latency
//! ```
//!
//! `bulk_cost` is what an RPC whose data does not fit inline costs on top: DAOS sends up to
//! `DAOS_BULK_LIMIT` (19456) bytes of data, counting 16 per iov and 8 per sgl, inside the RPC,
//! and more by a bulk transfer (a bulk handle, and the engine pulling the data in an RDMA
//! round trip). `recx_cost` is what a real engine spends per extent (an extent of the object index, a segment
//! of the bulk transfer); without it an RPC of 64 extents would cost as little as one of a single
//! extent, and folding would always win. `copies` is how many times a write's bytes cross the
//! link: the replicas of an RP_n object, 1.5 for EC 2+1. With every figure at 0 nothing is timed:
//! no clock reads, no sleeps. `bench/calibrate.py` fits the figures to a real engine.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// Which cost figures an RPC pays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Update,
    Fetch,
    /// punch, query_key: fetch's per-RPC cost, no extents, no bytes.
    Other,
}

/// The serialized cost figures of one operation.
struct OpCost {
    rpc_ns: AtomicU64,
    bulk_ns: AtomicU64,
    recx_ns: AtomicU64,
    /// Bytes per nanosecond (= GB/s) as f64 bits; 0 = unlimited.
    bw_bits: AtomicU64,
}

impl OpCost {
    const fn zero() -> Self {
        OpCost {
            rpc_ns: AtomicU64::new(0),
            bulk_ns: AtomicU64::new(0),
            recx_ns: AtomicU64::new(0),
            bw_bits: AtomicU64::new(0),
        }
    }

    fn is_zero(&self) -> bool {
        self.rpc_ns.load(Relaxed) == 0
            && self.bulk_ns.load(Relaxed) == 0
            && self.recx_ns.load(Relaxed) == 0
            && self.bw_bits.load(Relaxed) == 0
    }

    /// `bytes` is what the RPC carries (for the bulk decision), `moved` what crosses the link.
    fn busy_ns(&self, recxs: u64, bytes: u64, moved: f64) -> u64 {
        let bw = self.bw_bits.load(Relaxed);
        let xfer = if bw != 0 { (moved / f64::from_bits(bw)) as u64 } else { 0 };
        let bulk = if goes_by_bulk(recxs, bytes) { self.bulk_ns.load(Relaxed) } else { 0 };
        self.rpc_ns
            .load(Relaxed)
            .saturating_add(bulk)
            .saturating_add(self.recx_ns.load(Relaxed).saturating_mul(recxs))
            .saturating_add(xfer)
    }
}

/// DAOS's `DAOS_BULK_LIMIT`: an RPC's data (plus 16 bytes per iov and 8 per sgl) below this
/// travels inside the RPC.
pub const BULK_LIMIT: u64 = 19456;

/// Whether an RPC of `recxs` extents (one iov each, as the plugin sends them) and `bytes` of
/// data goes by bulk transfer.
pub fn goes_by_bulk(recxs: u64, bytes: u64) -> bool {
    bytes + 16 * recxs + 8 >= BULK_LIMIT
}

static UPDATE: OpCost = OpCost::zero();
static FETCH: OpCost = OpCost::zero();
static LATENCY_NS: AtomicU64 = AtomicU64::new(0);
/// When the shared link is next free.
static LINK_FREE: Mutex<Option<Instant>> = Mutex::new(None);

fn ns(us: f64) -> u64 {
    (us * 1000.0) as u64
}

fn gbps_bits(gbps: f64) -> u64 {
    if gbps > 0.0 {
        gbps.to_bits()
    } else {
        0
    }
}

static BOTH: [&OpCost; 2] = [&UPDATE, &FETCH];
static ONLY_UPDATE: [&OpCost; 1] = [&UPDATE];
static ONLY_FETCH: [&OpCost; 1] = [&FETCH];

/// The figures a setter changes: one operation's, or (None) both.
fn ops(which: Option<Op>) -> &'static [&'static OpCost] {
    match which {
        Some(Op::Update) => &ONLY_UPDATE,
        Some(Op::Fetch) | Some(Op::Other) => &ONLY_FETCH,
        None => &BOTH,
    }
}

pub fn set_latency_us(us: f64) {
    LATENCY_NS.store(ns(us), Relaxed);
}

/// Sets the link's bandwidth for both operations; 0 = unlimited.
pub fn set_bandwidth_gbps(gbps: f64) {
    for c in ops(None) {
        c.bw_bits.store(gbps_bits(gbps), Relaxed);
    }
    forget_link_if_unused();
}

/// Sets the per-RPC cost of both operations.
pub fn set_rpc_cost_us(us: f64) {
    for c in ops(None) {
        c.rpc_ns.store(ns(us), Relaxed);
    }
    forget_link_if_unused();
}

/// Sets the per-extent cost of both operations.
pub fn set_recx_cost_us(us: f64) {
    for c in ops(None) {
        c.recx_ns.store(ns(us), Relaxed);
    }
    forget_link_if_unused();
}

/// Sets all four figures of one operation (`Op::Other` is fetch's).
pub fn set_op_cost(op: Op, rpc_us: f64, recx_us: f64, gbps: f64, bulk_us: f64) {
    for c in ops(Some(op)) {
        c.rpc_ns.store(ns(rpc_us), Relaxed);
        c.bulk_ns.store(ns(bulk_us), Relaxed);
        c.recx_ns.store(ns(recx_us), Relaxed);
        c.bw_bits.store(gbps_bits(gbps), Relaxed);
    }
    forget_link_if_unused();
}

/// With no serialized figure left the link is not modelled: drop its busy time, so that turning
/// one on later does not start behind a stale queue.
fn forget_link_if_unused() {
    if UPDATE.is_zero() && FETCH.is_zero() {
        *LINK_FREE.lock() = None;
    }
}

/// The figures as text, for logs: `rpc_us/recx_us/gbps/bulk_us` per operation.
pub fn describe() -> String {
    let one = |c: &OpCost| {
        let bw = c.bw_bits.load(Relaxed);
        format!(
            "{}/{}/{}/{}",
            c.rpc_ns.load(Relaxed) as f64 / 1000.0,
            c.recx_ns.load(Relaxed) as f64 / 1000.0,
            if bw == 0 { 0.0 } else { f64::from_bits(bw) },
            c.bulk_ns.load(Relaxed) as f64 / 1000.0
        )
    };
    format!("update {} fetch {} latency_us {}", one(&UPDATE), one(&FETCH), LATENCY_NS.load(Relaxed) as f64 / 1000.0)
}

/// How long an RPC holds the link: an update's bytes cross it once per copy, a fetch's once;
/// punch and query_key carry no extents and no bytes.
fn busy_ns(op: Op, recxs: u64, bytes: u64, copies: f64) -> u64 {
    match op {
        Op::Update => UPDATE.busy_ns(recxs, bytes, bytes as f64 * copies.max(1.0)),
        Op::Fetch => FETCH.busy_ns(recxs, bytes, bytes as f64),
        Op::Other => FETCH.busy_ns(0, 0, 0.0),
    }
}

/// When an object RPC sent now may complete; `None` = at once (the model is off, and then no
/// clock is read). `copies` multiplies an update's bytes (replicas); fetches move them once.
pub fn ready_at(op: Op, recxs: u64, bytes: u64, copies: f64) -> Option<Instant> {
    let lat = LATENCY_NS.load(Relaxed);
    let cost = match op {
        Op::Update => &UPDATE,
        Op::Fetch | Op::Other => &FETCH,
    };
    if lat == 0 && UPDATE.is_zero() && FETCH.is_zero() {
        return None;
    }
    let now = Instant::now();
    let mut t = now;
    if !cost.is_zero() {
        let busy = Duration::from_nanos(busy_ns(op, recxs, bytes, copies));
        let mut link = LINK_FREE.lock();
        let start = match *link {
            Some(f) if f > now => f,
            _ => now,
        };
        t = start + busy;
        *link = Some(t);
    }
    Some(t + Duration::from_nanos(lat))
}

#[cfg(test)]
mod tests {
    use super::*;

    // The figures are process-wide: one test sets and checks them all, then turns them off.
    #[test]
    fn busy_time_adds_rpc_extent_and_byte_costs_per_operation() {
        set_op_cost(Op::Update, 40.0, 20.0, 1.0, 0.0);
        set_op_cost(Op::Fetch, 30.0, 10.0, 2.0, 100.0);
        assert_eq!(UPDATE.busy_ns(64, 4096 * 64, 4096.0 * 64.0), 40_000 + 64 * 20_000 + 262_144);
        // A bulk RPC pays bulk_cost; an inline one (4 KiB of data) does not.
        assert_eq!(FETCH.busy_ns(1, 1_000_000, 1_000_000.0), 30_000 + 100_000 + 10_000 + 500_000);
        assert_eq!(FETCH.busy_ns(1, 4096, 4096.0), 30_000 + 10_000 + 2048);
        // DAOS_BULK_LIMIT counts 16 bytes per iov and 8 per sgl with the data.
        assert!(!goes_by_bulk(1, BULK_LIMIT - 25));
        assert!(goes_by_bulk(1, BULK_LIMIT - 24));
        assert!(goes_by_bulk(64, 18 * 1024));
        // A sequence of RPCs sent at once completes one busy time after another.
        let t0 = Instant::now();
        let a = ready_at(Op::Update, 1, 0, 1.0).unwrap();
        let b = ready_at(Op::Update, 1, 0, 1.0).unwrap();
        assert!(b.duration_since(a) >= Duration::from_micros(60));
        assert!(a.duration_since(t0) >= Duration::from_micros(60));
        // Replicas multiply an update's bytes, not a fetch's; punch and query pay the RPC only.
        set_op_cost(Op::Update, 0.0, 0.0, 1.0, 0.0);
        set_op_cost(Op::Fetch, 5.0, 0.0, 1.0, 0.0);
        assert_eq!(busy_ns(Op::Update, 1, 1_000_000, 3.0), 3_000_000);
        assert_eq!(busy_ns(Op::Update, 1, 1_000_000, 1.5), 1_500_000);
        assert_eq!(busy_ns(Op::Update, 1, 1_000_000, 0.0), 1_000_000); // at least one copy
        assert_eq!(busy_ns(Op::Fetch, 1, 1_000_000, 3.0), 5_000 + 1_000_000);
        assert_eq!(busy_ns(Op::Other, 7, 1_000_000, 3.0), 5_000);
        set_op_cost(Op::Fetch, 0.0, 0.0, 1.0, 0.0);
        assert!(describe().starts_with("update 0/0/1/0 fetch 0/0/1/0"));
        set_op_cost(Op::Update, 0.0, 0.0, 0.0, 0.0);
        set_op_cost(Op::Fetch, 0.0, 0.0, 0.0, 0.0);
        assert_eq!(ready_at(Op::Fetch, 1, 1, 1.0), None);
        assert!(LINK_FREE.lock().is_none());
    }
}
