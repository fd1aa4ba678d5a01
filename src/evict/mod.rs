// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//! Eviction: the keys' object stays a cache when the pool fills up.
//!
//! NIXL has no delete, and no consumer we serve deletes what it offloads, so without this a
//! pool fills and every later write fails with `DER_NOSPACE`. The plugin therefore evicts the
//! oldest-written keys of its own object (it touches nothing else in the pool) when the pool's
//! free share drops below `evict_keep_free`, and at once when a write was refused for space.
//!
//! Where the order lives: in DAOS, in an index object beside the keys (`index`). Each engine
//! writes the keys it stored, with the id of each write, into numbered segments; numbers grow
//! with time and are claimed with a conditional insert, so the oldest segment holds the oldest
//! writes of every process sharing the container, and no engine needs to see the others'
//! traffic. What the hot path pays: the id of the write rides in the update RPC that carries the
//! data (one more 8-byte single-value iod, no round trip), and a completed write pushes one
//! record into a buffer this thread flushes as one batch update every `FLUSH_EVERY` (the index
//! costs one RPC per batch, not per request). Reads pay nothing.
//!
//! How a key goes: this thread reads the oldest segment's batches, and for each record fetches
//! the key's `gen` (the id of the write that stored it last): only when it still holds the
//! record's id is the key punched, so a key rewritten since (by any engine) is kept, and a
//! second evictor of the same segment finds nothing more to punch. Segments are claimed for
//! eviction with a conditional insert, so two evictors at once work on different segments.
//! DAOS punches are atomic per dkey: a fetch sees the whole old value or nothing, which the
//! transfer reports as a missing key (`NIXL_ERR_BACKEND`, `queryMem` None).

pub mod index;
pub mod policy;

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use parking_lot::{Condvar, Mutex};

use crate::daos::kv::Put;
use crate::daos::{sys, Bound, Container, InitGuard, Object, Pool};
use crate::error::Error;
use crate::key::ObjectKey;
use crate::record::{Record as ValueRecord, RECORD_BYTES, REC_AKEY};
use index::{Claim, Record};

/// How often buffered records are written to the index.
const FLUSH_EVERY: Duration = Duration::from_millis(200);
/// Records per batch at most (a batch is one single value: about 20 bytes plus the key each).
const BATCH_RECORDS: usize = 512;
/// A writer starts a new segment after this long, so that segments stay ordered by time.
const SEGMENT_AGE: Duration = Duration::from_secs(10);
/// Records kept while the index cannot be written (a full pool, a dead server); older ones go
/// (those keys are then never evicted; counted in `dropped`).
const PENDING_CAP: usize = 1 << 18;
/// An evictor's claim on a segment that is older than this is taken over (its engine died).
const EVICT_LEASE_MS: u64 = 120_000;
/// Longest one index call may take (they run on this thread, never on a transfer's path).
const CALL_BOUND_MS: u64 = 5_000;
/// Another engine's segment younger than this may still get batches (it writes into one for
/// `SEGMENT_AGE`): it is not punched yet.
const OWNER_SLACK_MS: u64 = 3 * SEGMENT_AGE.as_millis() as u64;
/// Commits of one key's check-and-punch tried before the key is kept (it is being rewritten).
const TX_TRIES: usize = 3;
/// Batches the last flush of a stopping engine writes at most.
const FINAL_BATCHES: usize = 8;
/// Segment numbers tried past the tail hint before it is read again.
const CLAIM_TRIES: u64 = 64;

/// How often the pool's space is checked (one pool query RPC per engine each time).
const CHECK_EVERY: Duration = Duration::from_millis(1000);
/// Longest wait between checks of an engine with nothing to do (`policy::check_interval`).
/// Its ledger entry goes stale meanwhile, which the others read as this engine writing nothing
/// and holding no reclaim credit: what it then is.
const QUIET_CHECK_MAX: Duration = Duration::from_secs(30);

/// Eviction settings: the backend parameters (`config::Eviction`) and the check interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Settings {
    /// Share of the pool kept free, 0-1.
    pub keep_free: f64,
    /// How long punched bytes count as free (DAOS reclaims them when it aggregates).
    pub reclaim: Duration,
    /// How often the pool's space is checked.
    pub check_every: Duration,
}

impl Settings {
    pub fn from_config(e: &crate::config::Eviction) -> Settings {
        Settings { keep_free: e.keep_free, reclaim: Duration::from_millis(e.reclaim_ms), check_every: CHECK_EVERY }
    }
}

/// What eviction did, for logs and tests.
#[derive(Default, Debug)]
pub struct Counters {
    pub recorded: AtomicU64,
    pub recorded_bytes: AtomicU64,
    pub flushed: AtomicU64,
    pub dropped: AtomicU64,
    pub segments_claimed: AtomicU64,
    pub evicted_keys: AtomicU64,
    pub evicted_bytes: AtomicU64,
    pub kept_rewritten: AtomicU64,
    pub tx_restarts: AtomicU64,
    pub torn: AtomicU64,
    pub skipped_errors: AtomicU64,
    pub nospace: AtomicU64,
    pub passes: AtomicU64,
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// An id for this engine, different in every process and engine with high probability: the
/// time, the process and an address, mixed (no RNG crate; it need not be cryptographic).
fn engine_id() -> u64 {
    static N: AtomicU64 = AtomicU64::new(0);
    let mut x = now_ms() ^ (u64::from(std::process::id()) << 40) ^ N.fetch_add(1, Ordering::Relaxed) << 20;
    x ^= &x as *const u64 as u64;
    // splitmix64's finaliser.
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Ids of writes: every update stores its posting's id in its record (`crate::record`), whether
/// or not this engine evicts, so that an evicting engine sharing the container never takes a
/// key rewritten by this one for the old write its record names.
pub struct WriteIds {
    next: AtomicU64,
}

impl Default for WriteIds {
    fn default() -> WriteIds {
        // Ids start at a mix of an engine id, so two engines' ids do not collide.
        WriteIds { next: AtomicU64::new(engine_id().rotate_left(32) | 1) }
    }
}

impl WriteIds {
    /// A fresh write id (never 0).
    pub fn next(&self) -> u64 {
        loop {
            let id = self.next.fetch_add(1, Ordering::Relaxed);
            if id != 0 {
                return id;
            }
        }
    }
}

/// One posting of a write, as eviction sees it: a key is recorded once, when none of the
/// posting's folds of that key can still land (each succeeded, failed, or was dropped), with
/// the bytes that landed. Recording a key while one of its folds is still in DAOS (or waiting to
/// be sent again after a refusal for space) would let the evictor punch it in between, and the
/// late fold would then leave a key holding only its own range: a read of the whole key would
/// succeed over a hole.
pub struct Posting {
    rec: Arc<Recorder>,
    id: u64,
    /// Per key (a chunked container's dkeys grouped under their key, `ObjectKey::base`): folds
    /// not yet settled, the bytes landed in each dkey, whether one failed.
    keys: Mutex<HashMap<ObjectKey, Settling>>,
}

#[derive(Default)]
struct Settling {
    folds: usize,
    landed: Vec<(ObjectKey, u64)>,
    failed: bool,
}

impl Posting {
    /// `folds`: the dkey of each fold of the posting.
    pub fn new<'a>(rec: Arc<Recorder>, id: u64, folds: impl Iterator<Item = &'a ObjectKey>) -> Posting {
        let mut keys: HashMap<ObjectKey, Settling> = HashMap::new();
        for k in folds {
            keys.entry(k.base()).or_default().folds += 1;
        }
        Posting { rec, id, keys: Mutex::new(keys) }
    }

    /// One fold of dkey `dkey` is settled: `landed` bytes of it are in DAOS (None: nothing
    /// landed). A key some of whose folds landed and some not holds part of this write beside
    /// whatever was there (or holes, which a read would report as success): it is evicted
    /// first, not in its turn (`Recorder::torn`), as soon as the eviction thread sees it. In a
    /// chunked container that is every dkey of the key this write landed in: a chunk that did
    /// not land may still hold an older write's bytes, which a read would return beside this
    /// write's, so its chunk 0 (or whichever landed) goes and a read reports the key missing.
    pub fn settle(&self, dkey: &ObjectKey, landed: Option<u64>) {
        let base = dkey.base();
        let done = {
            let mut keys = self.keys.lock();
            let Some(e) = keys.get_mut(&base) else { return };
            e.folds = e.folds.saturating_sub(1);
            match landed {
                Some(b) => match e.landed.iter_mut().find(|(k, _)| k == dkey) {
                    Some((_, sum)) => *sum += b,
                    None => e.landed.push((dkey.clone(), b)),
                },
                None => e.failed = true,
            }
            if e.folds > 0 {
                return;
            }
            keys.remove(&base)
        };
        let Some(mut done) = done else { return };
        // Chunk 0 first: eviction punches in record order, and may stop between two records
        // (its goal reached); the key's own dkey gone first, the key reads as missing (and
        // `queryMem` says None) whichever of its chunks are left for a later pass.
        done.landed.sort_by_key(|(k, _)| k.chunk_index());
        for (k, bytes) in done.landed.iter().filter(|(_, b)| *b > 0) {
            if done.failed {
                self.rec.torn(k, self.id, *bytes)
            } else {
                self.rec.wrote(k, self.id, *bytes)
            }
        }
    }
}

/// What the lanes tell eviction: writes that completed (records) and writes refused for space.
pub struct Recorder {
    writer: u64,
    /// Until when (Unix ms) space is expected back: bytes punched by this engine or, by the
    /// ledger, by another within the reclaim window, or the next pass while the last one found
    /// keys to punch (`Worker::publish`). A write refused for space is sent again
    /// only while this lies ahead (or in its first moments, before eviction had a look), so
    /// that a pool full of what eviction cannot touch fails writes at once, not at the deadline.
    room_until_ms: AtomicU64,
    pending: Mutex<VecDeque<Record>>,
    /// Keys a write left in part (see `Posting::settle`): punched at the next wake-up, while
    /// they still hold that write.
    torn: Mutex<Vec<Record>>,
    pressure: AtomicBool,
    wake: Condvar,
    wake_lock: Mutex<()>,
    pub counters: Counters,
}

impl Recorder {
    fn new() -> Recorder {
        let writer = engine_id();
        Recorder {
            writer,
            room_until_ms: AtomicU64::new(0),
            pending: Mutex::new(VecDeque::new()),
            torn: Mutex::new(Vec::new()),
            pressure: AtomicBool::new(false),
            wake: Condvar::new(),
            wake_lock: Mutex::new(()),
            counters: Counters::default(),
        }
    }

    /// A write of `key` (id `id`, `bytes` of it) completed: one push, no I/O.
    pub fn wrote(&self, key: &ObjectKey, id: u64, bytes: u64) {
        let mut p = self.pending.lock();
        if p.len() >= PENDING_CAP {
            p.pop_front();
            self.counters.dropped.fetch_add(1, Ordering::Relaxed);
        }
        p.push_back(Record { key: key.clone(), id, bytes });
        self.counters.recorded.fetch_add(1, Ordering::Relaxed);
        self.counters.recorded_bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    /// A write of `key` landed only in part: its key is punched soon (see `Posting::settle`).
    pub fn torn(&self, key: &ObjectKey, id: u64, bytes: u64) {
        self.counters.torn.fetch_add(1, Ordering::Relaxed);
        self.torn.lock().push(Record { key: key.clone(), id, bytes });
        self.wake();
    }

    /// Wakes the eviction thread (it otherwise sleeps up to `FLUSH_EVERY`).
    fn wake(&self) {
        let _g = self.wake_lock.lock();
        self.wake.notify_all();
    }

    /// Whether space is expected back (see `room_until_ms`).
    pub fn room_expected(&self) -> bool {
        self.room_until_ms.load(Ordering::Relaxed) > now_ms()
    }

    /// A write was refused for space: evict now rather than at the next check.
    pub fn out_of_space(&self) {
        self.counters.nospace.fetch_add(1, Ordering::Relaxed);
        if !self.pressure.swap(true, Ordering::AcqRel) {
            self.wake();
        }
    }
}

/// The segment this engine writes into.
struct Segment {
    n: u64,
    since: Instant,
    next_batch: usize,
}

/// The eviction thread's state.
/// Field order is close order: the objects, then the container, the pool, and last this
/// thread's own `daos_init` reference, so that an engine torn down while this thread is still
/// inside a DAOS call leaves DAOS usable under it until it ends.
struct Worker {
    keys: Arc<Object>,
    index: Arc<Object>,
    cont: Arc<Container>,
    pool: Arc<Pool>,
    _init: InitGuard,
    rec: Arc<Recorder>,
    settings: Settings,
    stop: Arc<AtomicBool>,
    seg: Option<Segment>,
    /// Highest segment number this engine claimed or saw.
    tail: u64,
    /// Lowest segment not known to be evicted.
    low: Option<u64>,
    /// Bytes punched and when, for the reclaim credit.
    punched: VecDeque<(Instant, u64)>,
    last_check: Option<Instant>,
    last_urgent: Option<Instant>,
    /// Bytes written over the last reclaim window, sampled at each check from `recorded_bytes`.
    demand: policy::Demand,
    written_before: u64,
    /// Checks in a row that found nothing to do (see `policy::check_interval`).
    quiet_checks: u32,
    /// Whether the last eviction pass found keys to punch (or could not tell): while so, a
    /// write refused for space waits for the next pass rather than failing at once.
    evictable: bool,
}

fn bound() -> Bound {
    Bound::from_now(CALL_BOUND_MS)
}

/// Runs one DAOS call while holding the host's drive guard (see host.rs): the host's exit waits
/// for it, and once the host is exiting no call starts (`bounded` gives up its wait then too).
fn driven<T>(f: impl FnOnce() -> Result<T, Error>) -> Result<T, Error> {
    let Some(_drive) = crate::host::drive() else { return Err(Error::ShuttingDown) };
    f()
}

impl Worker {
    fn hint(&self, dkey: &[u8]) -> Result<Option<u64>, Error> {
        let v = driven(|| self.index.get_values(dkey, &[index::HINT_AKEY], bound()))?;
        Ok(v[0].as_deref().and_then(index::u64_from))
    }

    fn set_hint(&self, dkey: &[u8], n: u64) {
        let b = n.to_le_bytes();
        if let Err(e) = driven(|| self.index.put_values(dkey, &[(index::HINT_AKEY, Some(&b))], 0, bound())) {
            tracing::debug!("eviction index: writing hint {}: {e}", String::from_utf8_lossy(dkey));
        }
    }

    /// Claims a new segment number above every one this engine knows.
    fn claim_segment(&mut self) -> Result<Segment, Error> {
        // Above both hints: a number below the head may be free again (evicted, punched), and
        // a segment claimed there would be older than everything and never be read.
        let head = self.hint(index::HEAD_DKEY)?.unwrap_or(0);
        let mut n = self.tail.max(self.hint(index::TAIL_DKEY)?.unwrap_or(0)).max(head) + 1;
        let claim = Claim { who: self.rec.writer, at_ms: now_ms() }.to_bytes();
        for _ in 0..CLAIM_TRIES {
            let put: [Put; 1] = [(index::OWNER_AKEY, Some(&claim))];
            match driven(|| self.index.put_values(&index::seg_dkey(n), &put, sys::DAOS_COND_DKEY_INSERT, bound())) {
                Ok(()) => {
                    self.tail = n;
                    self.set_hint(index::TAIL_DKEY, n);
                    self.rec.counters.segments_claimed.fetch_add(1, Ordering::Relaxed);
                    return Ok(Segment { n, since: Instant::now(), next_batch: 0 });
                }
                Err(e) if e.is_existing() => n += 1,
                Err(e) => return Err(e),
            }
        }
        self.tail = n;
        Err(Error::InvalidArg(format!("no free eviction segment number in {CLAIM_TRIES} tries below {n}")))
    }

    /// Writes buffered records to the index, one batch per call to DAOS. Once stopping, at most
    /// `FINAL_BATCHES` batches more (the engine's teardown waits for this thread).
    fn flush(&mut self) {
        let mut left = if self.stop.load(Ordering::Acquire) { FINAL_BATCHES } else { usize::MAX };
        loop {
            if left == 0 {
                return;
            }
            left -= 1;
            let batch: Vec<Record> = {
                let mut p = self.rec.pending.lock();
                let n = p.len().min(BATCH_RECORDS);
                p.drain(..n).collect()
            };
            if batch.is_empty() {
                return;
            }
            if let Err(e) = self.write_batch(&batch) {
                // Put them back in front; they are retried at the next flush.
                tracing::debug!("eviction index: writing {} record(s): {e}", batch.len());
                let mut p = self.rec.pending.lock();
                for r in batch.into_iter().rev() {
                    p.push_front(r);
                }
                return;
            }
            self.rec.counters.flushed.fetch_add(batch.len() as u64, Ordering::Relaxed);
        }
    }

    fn write_batch(&mut self, batch: &[Record]) -> Result<(), Error> {
        let stale =
            self.seg.as_ref().is_none_or(|s| s.next_batch >= index::SEG_BATCHES || s.since.elapsed() >= SEGMENT_AGE);
        if stale {
            self.seg = Some(self.claim_segment()?);
        }
        let seg = self.seg.as_mut().expect("claimed above");
        let value = index::encode(batch);
        let akey = index::batch_akey(seg.next_batch);
        driven(|| self.index.put_values(&index::seg_dkey(seg.n), &[(&akey, Some(&value))], 0, bound()))?;
        seg.next_batch += 1;
        Ok(())
    }

    /// Bytes punched within the reclaim window.
    fn credit(&mut self) -> u64 {
        let window = self.settings.reclaim;
        while self.punched.front().is_some_and(|(t, _)| t.elapsed() >= window) {
            self.punched.pop_front();
        }
        self.punched.iter().fold(0, |sum, (_, b)| sum.saturating_add(*b))
    }

    fn check_space(&mut self) {
        let urgent = self.rec.pressure.swap(false, Ordering::AcqRel)
            && self.last_urgent.is_none_or(|t| t.elapsed() >= Duration::from_secs(1));
        if self.rec.counters.recorded_bytes.load(Ordering::Relaxed) != self.written_before {
            self.quiet_checks = 0; // written to since the last check: back to the base interval
        }
        let every = policy::check_interval(self.settings.check_every, self.quiet_checks, QUIET_CHECK_MAX);
        let due = self.last_check.is_none_or(|t| t.elapsed() >= every);
        if !urgent && !due {
            return;
        }
        self.last_check = Some(Instant::now());
        let written = self.rec.counters.recorded_bytes.load(Ordering::Relaxed);
        self.demand.sample(written.saturating_sub(self.written_before), self.settings.reclaim);
        self.written_before = written;
        if urgent {
            self.last_urgent = Some(Instant::now());
        }
        let space = match driven(|| self.pool.space(bound())) {
            Ok(s) => s,
            Err(e) => {
                tracing::debug!("eviction: pool query: {e}");
                return;
            }
        };
        let total = space.total();
        let free = (space.free_fraction() * total as f64) as u64;
        let credit = self.credit();
        let demand = self.demand.bytes();
        // Every engine on the container sees the same pool: each counts the others' pending
        // reclaim and demand too (the ledger), and evicts its share of what all of them need,
        // or N engines would each evict the whole deficit.
        let others = self.read_ledger();
        let all_credit = credit.saturating_add(others.credit);
        let all_demand = demand.saturating_add(others.demand);
        let need = policy::to_evict(total, free, all_credit, self.settings.keep_free, all_demand, urgent);
        let goal = policy::share(need, demand, all_demand, others.engines + 1, urgent);
        let quiet = goal == 0 && demand == 0 && credit == 0 && !urgent;
        self.quiet_checks = if quiet { self.quiet_checks.saturating_add(1) } else { 0 };
        if goal == 0 {
            self.publish(demand, others.credit);
            return;
        }
        self.rec.counters.passes.fetch_add(1, Ordering::Relaxed);
        let t0 = Instant::now();
        let (mut keys, mut bytes, exhausted) = self.evict(goal);
        let short = urgent || (free as f64) < self.settings.keep_free * total as f64;
        if bytes < goal && exhausted && short {
            // The index holds nothing more, and the pool is short of space (so full that even
            // the index's small writes were refused, records wait here): evict from this
            // engine's unwritten records, oldest first. They are its newest writes, so only then.
            let (k, b) = self.evict_pending(goal - bytes);
            keys += k;
            bytes = bytes.saturating_add(b);
        }
        // Only a pass that went through the whole index and found nothing to punch says that
        // eviction cannot make room; a pass stopped by an error or by another engine's claim
        // does not.
        self.evictable = !(exhausted && bytes == 0);
        self.publish(demand, others.credit);
        tracing::info!(
            pool = %self.pool.label, total, free, credit, demand, others = others.engines, others_credit = others.credit,
            need, goal, keys, bytes, urgent, ms = t0.elapsed().as_millis() as u64,
            "DAOS backend evicted its oldest keys to keep {:.0}% of the pool free",
            self.settings.keep_free * 100.0
        );
    }

    /// After a check: this engine's pending reclaim and demand go to the ledger, and space is
    /// expected back (`Recorder::room_expected`) while something punched, by this engine or
    /// another, is pending.
    fn publish(&mut self, demand: u64, others_credit: u64) {
        let credit = self.credit();
        self.write_ledger(credit, demand);
        let pending = credit.saturating_add(others_credit);
        // Until the punched bytes are back, and then until the next check after that (a write
        // still refused makes it evict more). With nothing pending, until the next check as long
        // as the last pass found keys to punch: a check that needed no eviction (the pool had
        // room a moment ago) must not fail the writes that wait for space now, only a pass that
        // found nothing to punch does.
        let step = self.settings.check_every.as_millis() as u64;
        let until = if pending > 0 {
            now_ms() + self.settings.reclaim.as_millis() as u64 + step
        } else if self.evictable {
            now_ms() + step
        } else {
            0
        };
        self.rec.room_until_ms.store(until, Ordering::Relaxed);
    }

    /// The other engines' entries in the ledger that are fresh (updated within the reclaim
    /// window): their pending reclaim and demand, summed, and how many they are.
    fn read_ledger(&self) -> Others {
        let names: Vec<Vec<u8>> = (0..index::LEDGER_SLOTS).map(index::ledger_akey).collect();
        let refs: Vec<&[u8]> = names.iter().map(Vec::as_slice).collect();
        let vals = match driven(|| self.index.get_values(index::LEDGER_DKEY, &refs, bound())) {
            Ok(v) => v,
            Err(e) => {
                tracing::debug!("eviction: reading the ledger: {e}");
                return Others::default();
            }
        };
        let now = now_ms();
        let fresh_ms = self.settings.reclaim.as_millis() as u64 + LEDGER_SLACK_MS;
        let mut o = Others::default();
        for e in vals.iter().flatten().filter_map(|v| index::LedgerEntry::from_bytes(v)) {
            if e.who != self.rec.writer && e.fresh(now, fresh_ms) {
                o.engines += 1;
                o.credit = o.credit.saturating_add(e.credit);
                o.demand = o.demand.saturating_add(e.demand);
            }
        }
        o
    }

    /// Publishes this engine's pending reclaim and demand in its ledger slot (one small update).
    fn write_ledger(&self, credit: u64, demand: u64) {
        let e = index::LedgerEntry { who: self.rec.writer, at_ms: now_ms(), credit, demand };
        let akey = index::ledger_akey((self.rec.writer % index::LEDGER_SLOTS as u64) as usize);
        let put: [Put; 1] = [(&akey, Some(&e.to_bytes()))];
        if let Err(e) = driven(|| self.index.put_values(index::LEDGER_DKEY, &put, 0, bound())) {
            tracing::debug!("eviction: writing the ledger: {e}");
        }
    }

    /// Evicts about `goal` bytes from the oldest segments; returns the keys and bytes punched,
    /// and whether it went through every segment up to the tail with none held by another
    /// engine (the index holds no more).
    fn evict(&mut self, goal: u64) -> (u64, u64, bool) {
        let (mut keys, mut bytes) = (0u64, 0u64);
        let tail = match self.hint(index::TAIL_DKEY) {
            Ok(t) => t.unwrap_or(0).max(self.tail),
            Err(e) => {
                tracing::debug!("eviction: reading the tail hint: {e}");
                return (0, 0, false);
            }
        };
        let mut n = match self.low {
            Some(l) => l,
            None => self.hint(index::HEAD_DKEY).ok().flatten().unwrap_or(1),
        };
        let mut low_known = true; // every segment below `n` is known evicted
        while bytes < goal && n <= tail && !self.stop.load(Ordering::Acquire) {
            match self.evict_segment(n, goal - bytes) {
                Ok(Done { keys: k, bytes: b, finished, skipped }) => {
                    keys += k;
                    bytes = bytes.saturating_add(b);
                    if !finished {
                        if skipped {
                            low_known = false; // another engine is on it
                        } else {
                            break; // goal reached inside this segment: resume here next time
                        }
                    } else if low_known {
                        self.low = Some(n + 1);
                        self.set_hint(index::HEAD_DKEY, n + 1);
                    }
                }
                Err(e) => {
                    tracing::debug!("eviction: segment {n}: {e}");
                    self.count(keys, bytes);
                    return (keys, bytes, false);
                }
            }
            n += 1;
        }
        self.count(keys, bytes);
        // A segment another engine holds is not exhausted: that engine is punching its keys.
        (keys, bytes, n > tail && low_known)
    }

    fn count(&self, keys: u64, bytes: u64) {
        self.rec.counters.evicted_keys.fetch_add(keys, Ordering::Relaxed);
        self.rec.counters.evicted_bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    fn evict_segment(&mut self, n: u64, goal: u64) -> Result<Done, Error> {
        let dkey = index::seg_dkey(n);
        let names: Vec<Vec<u8>> = [index::OWNER_AKEY.to_vec(), index::EVICT_AKEY.to_vec()]
            .into_iter()
            .chain((0..index::SEG_BATCHES).map(index::batch_akey))
            .collect();
        let refs: Vec<&[u8]> = names.iter().map(Vec::as_slice).collect();
        let vals = driven(|| self.index.get_values(&dkey, &refs, bound()))?;
        if vals.iter().all(Option::is_none) {
            return Ok(Done { keys: 0, bytes: 0, finished: true, skipped: false });
        }
        let me = Claim { who: self.rec.writer, at_ms: now_ms() };
        match vals[1].as_deref().and_then(Claim::from_bytes) {
            Some(c) if c.who != me.who && c.within(me.at_ms, EVICT_LEASE_MS) => {
                return Ok(Done { keys: 0, bytes: 0, finished: false, skipped: true });
            }
            Some(c) if c.who == me.who => {}
            Some(_) => {
                match driven(|| self.index.put_values(&dkey, &[(index::EVICT_AKEY, Some(&me.to_bytes()))], 0, bound()))
                {
                    // A full pool may refuse even the claim: evict without it (a second evictor of
                    // the same segment finds the keys gone, and punches nothing twice).
                    Err(e) if !e.is_nospace() => return Err(e),
                    _ => {}
                }
            }
            None => {
                let put: [Put; 1] = [(index::EVICT_AKEY, Some(&me.to_bytes()))];
                match driven(|| self.index.put_values(&dkey, &put, sys::DAOS_COND_AKEY_INSERT, bound())) {
                    Ok(()) => {}
                    Err(e) if e.is_existing() => return Ok(Done { keys: 0, bytes: 0, finished: false, skipped: true }),
                    Err(e) if e.is_nospace() => {}
                    Err(e) => return Err(e),
                }
            }
        }
        // Our own segment: new records go to a fresh one from now on. Another engine's that it
        // may still append to (claimed less than OWNER_SLACK ago): its batches are evicted, but
        // the segment stays, or a batch appended meanwhile would be punched unread (or recreate
        // the segment below the head, where nobody reads).
        if self.seg.as_ref().is_some_and(|s| s.n == n) {
            self.seg = None;
        }
        let live_elsewhere = vals[0]
            .as_deref()
            .and_then(Claim::from_bytes)
            .is_some_and(|c| c.who != me.who && c.within(me.at_ms, OWNER_SLACK_MS));
        let (mut keys, mut bytes) = (0, 0);
        for (k, v) in vals[2..].iter().enumerate() {
            let Some(v) = v else { continue };
            if bytes >= goal || self.stop.load(Ordering::Acquire) {
                return Ok(Done { keys, bytes, finished: false, skipped: false });
            }
            match index::decode(v) {
                Ok(records) => {
                    for (j, r) in records.iter().enumerate() {
                        if bytes >= goal || self.stop.load(Ordering::Acquire) {
                            // Goal reached inside the batch: keep its rest for the next pass.
                            // Refused for space: the next pass reads the whole batch again
                            // and finds the keys punched here gone (their gen with them).
                            let rest = index::encode(&records[j..]);
                            let put: [Put; 1] = [(&names[2 + k], Some(&rest))];
                            if let Err(e) = driven(|| self.index.put_values(&dkey, &put, 0, bound())) {
                                tracing::debug!("eviction index: keeping the rest of batch {k} of segment {n}: {e}");
                            }
                            return Ok(Done { keys, bytes, finished: false, skipped: false });
                        }
                        match self.evict_key(r) {
                            Ok(true) => {
                                keys += 1;
                                // Saturating: `bytes` is what an index record says, which another writer to the
                                // container may have stored (an overflow would wrap the goal's check).
                                bytes = bytes.saturating_add(r.bytes);
                            }
                            Ok(false) => {}
                            Err(Error::ShuttingDown) => return Err(Error::ShuttingDown),
                            // One key's trouble must not hold the segment back: skip it.
                            Err(e) => {
                                self.rec.counters.skipped_errors.fetch_add(1, Ordering::Relaxed);
                                tracing::debug!("eviction: key {}: {e}; skipped", r.key.display());
                            }
                        }
                    }
                }
                Err(e) => tracing::warn!("eviction index: segment {n} batch {k} unreadable ({e}); skipped"),
            }
            // A full pool may refuse even this (a punch by update): the batch is read again next
            // time, and its punched keys are found gone.
            match driven(|| self.index.put_values(&dkey, &[(&names[2 + k], None)], 0, bound())) {
                Err(e) if !e.is_nospace() => return Err(e),
                _ => {}
            }
        }
        if live_elsewhere {
            return Ok(Done { keys, bytes, finished: false, skipped: true });
        }
        driven(|| self.index.punch_dkey(&dkey, None, bound()))?;
        Ok(Done { keys, bytes, finished: true, skipped: false })
    }

    /// Punches the keys writes left in part, while they still hold that write.
    fn punch_torn(&mut self) {
        let torn: Vec<Record> = std::mem::take(&mut *self.rec.torn.lock());
        for r in torn {
            match self.evict_key(&r) {
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!("eviction: a key written in part ({}) could not be punched: {e}", r.key.display())
                }
            }
        }
    }

    /// Evicts about `goal` bytes from the records not yet written to the index, oldest first.
    fn evict_pending(&mut self, goal: u64) -> (u64, u64) {
        let (mut keys, mut bytes) = (0u64, 0u64);
        while bytes < goal && !self.stop.load(Ordering::Acquire) {
            let Some(r) = self.rec.pending.lock().pop_front() else { break };
            match self.evict_key(&r) {
                Ok(true) => {
                    keys += 1;
                    bytes += r.bytes;
                }
                Ok(false) => {}
                Err(e) => {
                    tracing::debug!("eviction: key {}: {e}", r.key.display());
                    self.rec.pending.lock().push_front(r);
                    break;
                }
            }
        }
        self.count(keys, bytes);
        (keys, bytes)
    }

    /// Punches the record's key if it still holds that write; true when punched. The check and
    /// the punch run in one transaction: a rewrite landing between them makes the commit fail
    /// (`DER_TX_RESTART`), and the check runs again and finds the newer id. Without it, a punch
    /// landing between two RPCs of a rewrite would leave the key with only the later one's range.
    fn evict_key(&mut self, r: &Record) -> Result<bool, Error> {
        // One guard for the whole exchange (a few RPCs): the transaction is closed under it.
        let Some(_drive) = crate::host::drive() else { return Err(Error::ShuttingDown) };
        let key = r.key.as_bytes();
        for _ in 0..TX_TRIES {
            let tx = self.cont.tx_open(bound())?;
            let rec = match self.keys.get_sized(key, REC_AKEY, RECORD_BYTES, Some(&tx), bound()) {
                Ok(g) => g,
                // DAOS may ask a transaction's read to restart too (its uncertainty check).
                Err(e) if e.is_tx_restart() => {
                    self.rec.counters.tx_restarts.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                Err(e) => return Err(e),
            };
            let gen = rec.as_deref().and_then(ValueRecord::from_bytes).map(|v| v.id);
            if gen != Some(r.id) {
                // Rewritten since (or already gone): the newer write has its own record.
                self.rec.counters.kept_rewritten.fetch_add(u64::from(gen.is_some()), Ordering::Relaxed);
                return Ok(false);
            }
            self.keys.punch_dkey(key, Some(&tx), bound())?;
            match tx.commit(bound()) {
                Ok(()) => {
                    // Counted as pending reclaim (the credit) until DAOS gives the space back.
                    self.punched.push_back((Instant::now(), r.bytes));
                    return Ok(true);
                }
                Err(e) if e.is_tx_restart() => self.rec.counters.tx_restarts.fetch_add(1, Ordering::Relaxed),
                Err(e) => return Err(e),
            };
        }
        Ok(false) // written to again and again: it is in use, keep it
    }

    fn run(&mut self) {
        loop {
            {
                let mut g = self.rec.wake_lock.lock();
                if !self.stop.load(Ordering::Acquire) && !self.rec.pressure.load(Ordering::Acquire) {
                    self.rec.wake.wait_for(&mut g, FLUSH_EVERY);
                }
            }
            // Each DAOS call holds the host's drive guard on its own (`driven`), so the host's
            // exit never waits for a whole pass.
            if crate::host::exiting() {
                return;
            }
            self.punch_torn();
            self.flush();
            if self.stop.load(Ordering::Acquire) {
                // Gone, it writes nothing more: the others must not leave its share of the
                // eviction to it (they divide what is needed by demand). Its pending reclaim
                // still counts until its entry goes stale. An engine that never checked
                // published nothing to take back.
                if self.last_check.is_some() {
                    let credit = self.credit();
                    self.write_ledger(credit, 0);
                }
                return;
            }
            self.check_space();
        }
    }
}

/// What the ledger says of the other engines on the container.
#[derive(Default)]
struct Others {
    engines: usize,
    credit: u64,
    demand: u64,
}

/// A ledger entry stays fresh this long past the reclaim window (its engine updates it every
/// check, about every second).
const LEDGER_SLACK_MS: u64 = 5_000;

struct Done {
    keys: u64,
    bytes: u64,
    /// Every batch was handled and the segment punched.
    finished: bool,
    /// Another engine holds it.
    skipped: bool,
}

/// The eviction thread of one engine.
pub struct Evictor {
    pub recorder: Arc<Recorder>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Evictor {
    pub fn start(
        settings: Settings,
        init: InitGuard,
        pool: Arc<Pool>,
        cont: Arc<Container>,
        keys: Arc<Object>,
        index: Arc<Object>,
    ) -> Result<Evictor, Error> {
        let rec = Arc::new(Recorder::new());
        let stop = Arc::new(AtomicBool::new(false));
        let mut w = Worker {
            keys,
            index,
            cont,
            pool,
            _init: init,
            rec: rec.clone(),
            settings,
            stop: stop.clone(),
            seg: None,
            tail: 0,
            low: None,
            punched: VecDeque::new(),
            last_check: None,
            last_urgent: None,
            demand: policy::Demand::default(),
            written_before: 0,
            quiet_checks: 0,
            evictable: true,
        };
        let thread = std::thread::Builder::new()
            .name("nixl-daos-evict".into())
            .spawn(move || {
                if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| w.run())).is_err() {
                    tracing::error!("DAOS eviction thread panicked; eviction stops for this backend");
                }
            })
            .map_err(|source| Error::Spawn { what: "the DAOS eviction thread", source })?;
        Ok(Evictor { recorder: rec, stop, thread: Some(thread) })
    }

    /// Stops the thread after a last flush, waiting at most `grace`; past it the thread is left
    /// to finish its DAOS call on its own (it holds its own references to the handles).
    pub fn stop(&mut self, grace: Duration) {
        self.stop.store(true, Ordering::Release);
        self.recorder.wake();
        let Some(t) = self.thread.take() else { return };
        if !crate::join::join_within(t, grace) {
            tracing::warn!("DAOS eviction thread still inside DAOS after {grace:?}; left to finish on its own");
        }
    }
}

impl Drop for Evictor {
    fn drop(&mut self) {
        self.stop(Duration::from_millis(1000));
    }
}
