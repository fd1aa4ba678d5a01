// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//! I/O lanes: N DAOS event queues, each drained by one progress thread.
//!
//! DAOS progresses only inside `daos_eq_poll`, and NIXL consumers call `checkXfer` every
//! 0.1-100 ms; a thread per queue keeps RPCs (and, in daos-sim, their data copies) moving
//! between those calls, in parallel across queues. Posting threads launch operations on a
//! lane's queue directly while fewer than `max_inflight` RPCs are in flight in the whole
//! engine; the rest wait in one queue shared by the lanes, and whichever lane frees a slot
//! launches the oldest on its own event queue.
//!
//! Ownership: an `Op` (its event, iods, sgls, key) is a `Box` that belongs to DAOS from launch
//! until its event is reaped. If the lane is torn down while DAOS still holds some (a hung
//! server), they are leaked, never freed: late completion must never touch freed memory. The
//! same holds for size queries a `queryMem` gave up on at its deadline: they are handed to the
//! lanes ("orphans"), which reap them when DAOS completes them.

use std::collections::{HashMap, VecDeque};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::attempt::{Attempt, Budget};
use crate::bounce::BouncePool;
use crate::daos::io::{Extent, IoDesc, IoKind};
use crate::daos::query::Abandoned;
use crate::daos::{daos_event_t, rc_is_nospace, EventQueue, Library, Object};
use crate::error::Error;
use crate::evict::{Posting, Recorder};
use crate::key::ObjectKey;

/// How long one `daos_eq_poll` may wait; bounds how late a lane notices shutdown, and how late
/// a lane launches waiting ops after another lane freed an in-flight slot.
const POLL_US: i64 = 20_000;
/// Events reaped per poll.
const REAP_BATCH: usize = 64;
/// Orphaned size queries tested per pass of the reaping lane.
const ORPHAN_BATCH: usize = 4096;
/// Still-running orphans in a row that end a reaping pass.
const ORPHAN_MISSES: usize = 8;
/// How long the reaping lane parks while orphans remain.
const PARK_REAPING: Duration = Duration::from_millis(10);
/// Longest a parked lane sleeps (it then reaps orphans and re-checks its work).
const PARK: Duration = Duration::from_millis(100);
/// First and longest wait before a write refused for space is sent again (eviction on).
const NOSPACE_RETRY_FIRST: Duration = Duration::from_millis(50);
const NOSPACE_RETRY_MAX: Duration = Duration::from_millis(1000);
/// How long after its first refusal a write is sent again even when eviction has not (yet)
/// said space is coming: its first pass takes a moment.
const NOSPACE_GRACE: Duration = Duration::from_millis(2000);
/// Sends of a late write's punch before the key is fenced for the engine's life instead.
const PUNCH_TRIES: u8 = 3;
/// How long a late write's landing is remembered for the fetches in flight across it (longer
/// than any fetch's deadline and hold), and how many keys before old ones are forgotten.
const LATE_MEMORY: Duration = Duration::from_secs(600);
const LATE_KEYS: usize = 4096;

/// One DAOS operation. `#[repr(C)]` with the event first: the event pointer DAOS hands back
/// from `daos_eq_poll` is the address of the whole `Op`.
#[repr(C)]
pub struct Op {
    ev: daos_event_t,
    io: IoDesc,
    /// The transfer it belongs to.
    attempt: Option<Arc<Attempt>>,
    /// Wait before the next send of a write refused for space (doubles each time), and when it
    /// was first refused.
    backoff: Duration,
    refused_at: Option<Instant>,
    /// The write posting this update belongs to, for eviction's record (None with eviction off,
    /// and for reads).
    posting: Option<Arc<Posting>>,
    /// A punch of a write that landed late holds that write's place in the write fence, and
    /// leaves it when DAOS has punched the key.
    fence: Option<Instant>,
    /// Sends of this punch that failed so far.
    punch_failures: u8,
    /// When a fetch was handed to DAOS (to tell whether a write of its key went late meanwhile).
    launched_at: Option<Instant>,
}

impl Op {
    /// `gen`: the write id an update stores beside the data, see `IoDesc::new`.
    /// `stage`: a fetch goes through a buffer of this pool's (`IoDesc::new_staged`).
    pub fn new(
        kind: IoKind,
        key: &ObjectKey,
        extents: &[Extent],
        gen: Option<u64>,
        attempt: Option<Arc<Attempt>>,
        posting: Option<Arc<Posting>>,
        stage: Option<&Arc<BouncePool>>,
    ) -> Box<Op> {
        let io = match (kind, stage) {
            (IoKind::Fetch, Some(pool)) => IoDesc::new_staged(key.clone(), extents, pool),
            _ => IoDesc::new(kind, key.clone(), extents, gen),
        };
        Box::new(Op {
            ev: daos_event_t::default(),
            io,
            attempt,
            backoff: NOSPACE_RETRY_FIRST,
            refused_at: None,
            posting,
            fence: None,
            punch_failures: 0,
            launched_at: None,
        })
    }

    /// Punch of `key`, holding the write fence's entry `fence` until it completes.
    fn punch(key: &ObjectKey, fence: Instant) -> Box<Op> {
        let mut op = Op::new(IoKind::Punch, key, &[], None, None, None, None);
        op.fence = Some(fence);
        op
    }

    fn daos_error(&self, lib: &Library, rc: i32) -> Error {
        let call = match self.io.kind {
            IoKind::Update => "daos_obj_update",
            IoKind::Fetch => "daos_obj_fetch",
            IoKind::Size => "daos_obj_query_key",
            IoKind::Punch => "daos_obj_punch_dkeys",
        };
        Error::Daos { call, rc, name: lib.errstr(rc) }
    }

    /// What a transfer learns from a completed update or fetch.
    fn xfer_result(&self, lib: &Library, rc: i32) -> Result<(), Error> {
        if rc != 0 {
            return Err(self.daos_error(lib, rc));
        }
        if self.io.kind == IoKind::Fetch {
            match self.io.fetched() {
                None => return Err(Error::NoSuchKey { key: self.io.key().display() }),
                Some(got) if got < self.io.bytes() => {
                    return Err(Error::ShortRead { key: self.io.key().display(), want: self.io.bytes(), got })
                }
                Some(_) => {}
            }
        }
        Ok(())
    }

    /// Reports the DAOS result to the op's transfer (after `Attempt::leave_daos`).
    fn finish(self: Box<Op>, lib: &Library, rc: i32) {
        let result = self.xfer_result(lib, rc);
        match (self.io.kind, &self.attempt) {
            (IoKind::Update, Some(_)) => crate::totals::rpc(crate::engine::XferOp::Write, result.is_ok()),
            (IoKind::Fetch, Some(_)) => crate::totals::rpc(crate::engine::XferOp::Read, result.is_ok()),
            _ => {}
        }
        if let Err(e) = &result {
            tracing::debug!(key = %self.io.key().display(), "DAOS operation failed: {e}");
        }
        // An update is atomic: with rc 0 all of it landed, otherwise none.
        self.settle((rc == 0).then(|| self.io.bytes()));
        if let Some(a) = &self.attempt {
            if self.io.staged() {
                // SAFETY: run only for a successful fetch whose transfer was not given up,
                // under the attempt's lock (complete_delivered), so the caller's buffers are
                // still theirs to write.
                a.complete_delivered(result, || unsafe { self.io.deliver() });
            } else {
                a.complete(result);
            }
        }
    }

    fn fail(self: Box<Op>, e: Error) {
        self.settle(None);
        if let Some(a) = &self.attempt {
            a.complete(Err(e));
        }
    }

    /// Completes an op dropped before it reached DAOS.
    fn skip(self: Box<Op>) {
        self.settle(None);
        if let Some(a) = &self.attempt {
            a.skip();
        }
    }

    /// This fold of a write can no longer land (it did, or never will): tells its posting.
    fn settle(&self, landed: Option<u64>) {
        if let Some(p) = &self.posting {
            p.settle(self.io.key(), landed);
        }
    }

    /// The write fence's entry this op holds: a transfer's update (its request's deadline),
    /// or the punch of one that landed late.
    fn fence_deadline(&self) -> Option<Instant> {
        match (self.io.kind, &self.attempt) {
            (IoKind::Update, Some(a)) => Some(a.deadline()),
            (IoKind::Punch, _) => self.fence,
            _ => None,
        }
    }
}

/// Size queries a `queryMem` gave up on at its deadline, still inside DAOS. The lanes test them
/// now and then and free each once DAOS has completed it.
#[derive(Default)]
struct Orphans {
    /// Handed over by queryMem callers; a short lock, never held while testing events.
    incoming: Mutex<Vec<Abandoned>>,
    /// Being tested by the reaping thread.
    held: Mutex<VecDeque<Abandoned>>,
    /// Not yet reaped, both lists together.
    count: AtomicUsize,
}

impl Orphans {
    fn adopt(&self, queries: Vec<Abandoned>) {
        let n = queries.len();
        self.incoming.lock().extend(queries);
        self.count.fetch_add(n, Ordering::AcqRel);
    }

    /// Tests up to ORPHAN_BATCH orphans, oldest first, without waiting, and frees those DAOS
    /// has completed. A pass ends after ORPHAN_MISSES queries in a row are still running: DAOS
    /// completes them roughly in order, and under a hang this keeps a pass to a few tests.
    /// The rotation moves the untested and still-running ones behind, so one query stuck for
    /// good does not hold back the others. Only one thread reaps at a time; others skip.
    fn reap(&self, lib: &Library) {
        if self.count.load(Ordering::Acquire) == 0 {
            return;
        }
        let Some(mut held) = self.held.try_lock() else { return };
        held.extend(self.incoming.lock().drain(..));
        let (mut i, mut tested, mut reaped, mut misses) = (0, 0, 0, 0);
        while i < held.len() && tested < ORPHAN_BATCH && misses < ORPHAN_MISSES {
            tested += 1;
            match held[i].try_reap(lib) {
                Ok(true) => {
                    held.remove(i); // near the front: cheap in a VecDeque; spent, so dropped
                    reaped += 1;
                    misses = 0;
                }
                Ok(false) => {
                    i += 1;
                    misses += 1;
                }
                Err(e) => {
                    tracing::debug!("testing an abandoned size query: {e}");
                    i += 1;
                    misses += 1;
                }
            }
        }
        // Rotate, so that the next pass tests the ones this pass did not reach.
        let n = held.len();
        if n > 0 {
            held.rotate_left(i.min(n));
        }
        self.count.fetch_sub(reaped, Ordering::AcqRel);
    }
}

/// State the lanes share: the engine-wide in-flight budget, the queue of ops waiting for it,
/// the write fence and the orphaned queries.
struct Shared {
    lib: &'static Library,
    /// In-flight slots of transfer RPCs, over all lanes (`max_inflight`).
    budget: Arc<Budget>,
    /// Told when DAOS answers in a way that says its pool map may have changed.
    trouble: Option<Arc<dyn Fn() + Send + Sync>>,
    /// How long after its first refusal for space a write may wait for eviction's room.
    space_wait: Duration,
    waiting: Mutex<VecDeque<Box<Op>>>,
    /// Length of `waiting`, readable without its lock: new ops go straight to DAOS only when
    /// nothing waits, so they never overtake queued ones.
    waiting_len: AtomicUsize,
    /// Deadlines of the updates DAOS holds, per key. An update of a key whose earlier update
    /// is past its deadline and still inside DAOS is not sent: the old one may land at any
    /// moment and would silently replace the new bytes, which the caller saw succeed. Nor is
    /// a fetch of it: the old update, once landed, is punched (`Lane::punch_late`), since its
    /// caller was told it failed and may have refilled the buffer DAOS reads it from.
    writes: Mutex<HashMap<ObjectKey, Vec<Instant>>>,
    /// Keys in `writes`, readable without its lock: fetches look only when some are.
    writes_len: AtomicUsize,
    /// When a given-up write of each key last landed (or came back from DAOS at all): a fetch
    /// of the key in flight then may have read that write's bytes, which may be a refilled
    /// buffer's, so it fails (see `Shared::overlapped_late`). Kept for `LATE_MEMORY`.
    late: Mutex<HashMap<ObjectKey, Instant>>,
    late_len: AtomicUsize,
    orphans: Orphans,
    /// Eviction's view of the writes (None with eviction off): completed writes and refusals
    /// for space.
    recorder: Option<Arc<Recorder>>,
    /// Writes refused for space, to be sent again at the given time (eviction on), while their
    /// request still wants them; otherwise dropped as a queued fold is.
    retry: Mutex<Vec<(Instant, Box<Op>)>>,
}

impl Shared {
    /// Moves the refused writes whose wait is over to the waiting queue.
    fn requeue_due(&self) {
        let now = Instant::now();
        let due: Vec<Box<Op>> = {
            let Some(mut r) = self.retry.try_lock() else { return };
            if r.is_empty() {
                return;
            }
            let (due, keep): (Vec<_>, Vec<_>) = r.drain(..).partition(|(at, _)| *at <= now);
            *r = keep;
            due.into_iter().map(|(_, op)| op).collect()
        };
        if due.is_empty() {
            return;
        }
        let mut w = self.waiting.lock();
        w.extend(due);
        self.waiting_len.store(w.len(), Ordering::SeqCst);
    }

    /// Fails every op not in DAOS (waiting for a slot, or to be sent again): the lanes stop.
    fn fail_queued(&self) {
        let mut ops: Vec<Box<Op>> = self.waiting.lock().drain(..).collect();
        ops.extend(self.retry.lock().drain(..).map(|(_, op)| op));
        self.waiting_len.store(0, Ordering::SeqCst);
        for op in ops {
            op.fail(Error::ShuttingDown);
        }
    }

    /// Takes an in-flight slot if one is free.
    fn reserve(&self) -> bool {
        if self.budget.take() {
            crate::host::in_daos_add(1);
            true
        } else {
            false
        }
    }

    /// Gives back what `reserve` took; `slot_returned`: the budget's slot went back already
    /// (its request was reported timed out), only the exit's count is left.
    fn unreserve(&self, slot_returned: bool) {
        if !slot_returned {
            self.budget.give(1);
        }
        crate::host::in_daos_sub(1);
    }

    /// Records an update about to be sent; Err when an abandoned earlier one blocks the key.
    fn fence_enter(&self, key: &ObjectKey, deadline: Instant) -> Result<(), Error> {
        let mut w = self.writes.lock();
        let now = Instant::now();
        let held = w.entry(key.clone()).or_default();
        if held.iter().any(|&d| d <= now) {
            return Err(Error::Fenced { key: key.display() });
        }
        held.push(deadline);
        self.writes_len.store(w.len(), Ordering::SeqCst);
        Ok(())
    }

    /// Err when a fetch of `key` must not be sent: an update of it is past its deadline and
    /// still inside DAOS, or landed late and is being punched.
    fn fence_check_read(&self, key: &ObjectKey) -> Result<(), Error> {
        if self.writes_len.load(Ordering::SeqCst) == 0 {
            return Ok(());
        }
        let now = Instant::now();
        match self.writes.lock().get(key) {
            Some(held) if held.iter().any(|&d| d <= now) => Err(Error::Fenced { key: key.display() }),
            _ => Ok(()),
        }
    }

    fn fence_leave(&self, key: &ObjectKey, deadline: Instant) {
        let mut w = self.writes.lock();
        if let Some(held) = w.get_mut(key) {
            if let Some(i) = held.iter().position(|&d| d == deadline) {
                held.swap_remove(i);
            }
            if held.is_empty() {
                w.remove(key);
            }
        }
        self.writes_len.store(w.len(), Ordering::SeqCst);
    }

    /// A given-up write of `key` came back from DAOS now.
    fn note_late(&self, key: &ObjectKey) {
        let now = Instant::now();
        let mut l = self.late.lock();
        if l.len() >= LATE_KEYS {
            l.retain(|_, at| now.duration_since(*at) < LATE_MEMORY);
        }
        l.insert(key.clone(), now);
        self.late_len.store(l.len(), Ordering::SeqCst);
    }

    /// Whether a fetch of `key` launched at `since` may have read bytes of a write the caller
    /// was told had failed: one is overdue in DAOS now, or one landed since the launch.
    fn overlapped_late(&self, key: &ObjectKey, since: Instant) -> bool {
        if self.writes_len.load(Ordering::SeqCst) > 0 && self.fence_check_read(key).is_err() {
            return true;
        }
        self.late_len.load(Ordering::SeqCst) > 0 && self.late.lock().get(key).is_some_and(|&at| at >= since)
    }

    fn trouble(&self) {
        if let Some(t) = &self.trouble {
            t();
        }
    }
}

struct Lane {
    shared: Arc<Shared>,
    /// Held by the lanes, not by `Shared` (which outlives them inside `Lanes`), so that the
    /// object closes with the last lane, before the engine closes the container.
    obj: Arc<Object>,
    eq: EventQueue,
    /// This lane's ops inside DAOS.
    inflight: AtomicUsize,
    park_lock: Mutex<()>,
    idle: Condvar,
    /// Set by the lane thread while it sleeps on `idle` with nothing in flight; submitters wake
    /// it only then, so a busy lane costs no futex call per operation.
    parked: AtomicBool,
    stop: AtomicBool,
    /// Ops still inside DAOS when the lane gave up on them at shutdown (left allocated).
    leaked: AtomicU64,
    /// This lane also reaps the size queries a queryMem gave up on (lane 0).
    reaps_orphans: bool,
}

impl Lane {
    /// Launches `op` now; it holds one engine-wide in-flight slot already, which this gives
    /// back if the op does not reach DAOS.
    fn launch(&self, op: Box<Op>) {
        let sh = &self.shared;
        if let Some(a) = &op.attempt {
            // Decided under the attempt's lock: once it was released, reposted, failed or
            // timed out, none of its folds reaches DAOS any more.
            if !a.begin_launch() {
                sh.unreserve(false);
                op.skip();
                return;
            }
            let fenced = match op.io.kind {
                IoKind::Update => sh.fence_enter(op.io.key(), a.deadline()),
                IoKind::Fetch => sh.fence_check_read(op.io.key()),
                _ => Ok(()),
            };
            if let Err(e) = fenced {
                tracing::warn!("{e}");
                sh.unreserve(a.leave_daos());
                op.fail(e);
                return;
            }
        }
        self.inflight.fetch_add(1, Ordering::SeqCst);
        let mut op = op;
        if op.io.kind == IoKind::Fetch {
            op.launched_at = Some(Instant::now());
        }
        let raw = Box::into_raw(op);
        // SAFETY: raw is a live, pinned (boxed) Op; from here until reaped it belongs to DAOS.
        // Pointers into it are derived from `raw` itself, so the reaped event pointer carries
        // the whole Op's provenance back. On failure to launch, the Op is ours again.
        unsafe {
            let ev = std::ptr::addr_of_mut!((*raw).ev);
            let rc = match self.eq.init_event(ev) {
                Err(e) => {
                    self.not_launched(Box::from_raw(raw), Err(e));
                    return;
                }
                Ok(()) => self.obj.launch(std::ptr::addr_of_mut!((*raw).io), ev),
            };
            if rc != 0 {
                // Not launched: the event never entered the queue.
                self.eq.fini_event(ev);
                self.not_launched(Box::from_raw(raw), Ok(rc));
            }
        }
    }

    /// Undoes `launch`'s accounting for an op DAOS refused; `rc`: DAOS's return code.
    fn not_launched(&self, op: Box<Op>, rc: Result<i32, Error>) {
        self.release_slot(&op, true);
        match rc {
            Ok(rc) => op.finish(self.shared.lib, rc),
            Err(e) => op.fail(e),
        }
    }

    /// Gives back what a launched op held: its slots and, unless `unfence` is false, its place
    /// in the write fence.
    fn release_slot(&self, op: &Op, unfence: bool) {
        if let (Some(d), true) = (op.fence_deadline(), unfence) {
            self.shared.fence_leave(op.io.key(), d);
        }
        self.inflight.fetch_sub(1, Ordering::SeqCst);
        let returned = op.attempt.as_ref().is_some_and(|a| a.leave_daos());
        self.shared.unreserve(returned);
    }

    fn submit(&self, op: Box<Op>) {
        let sh = &self.shared;
        // Held while this thread may launch into DAOS (see host.rs).
        let drive = crate::host::drive();
        if self.stop.load(Ordering::Acquire) || drive.is_none() {
            op.fail(Error::ShuttingDown);
            return;
        }
        if sh.waiting_len.load(Ordering::SeqCst) == 0 && sh.reserve() {
            self.launch(op);
            self.wake();
        } else {
            let mut w = sh.waiting.lock();
            w.push_back(op);
            sh.waiting_len.store(w.len(), Ordering::SeqCst);
        }
    }

    /// The lane parks only after seeing nothing in flight and nothing waiting (SeqCst on both
    /// sides): either it saw the new op, or the submitter sees it parked and wakes it. Taking
    /// the lock orders the notification after its check.
    fn wake(&self) {
        if self.parked.load(Ordering::SeqCst) {
            let _g = self.park_lock.lock();
            self.idle.notify_one();
        }
    }

    /// Launches waiting ops while the engine has room; those whose request no longer wants
    /// them (failed, released, or past its deadline) are dropped in `launch`.
    fn launch_waiting(&self) {
        let sh = &self.shared;
        while sh.waiting_len.load(Ordering::SeqCst) > 0 && sh.reserve() {
            let op = {
                let mut w = sh.waiting.lock();
                let op = w.pop_front();
                sh.waiting_len.store(w.len(), Ordering::SeqCst);
                op
            };
            match op {
                Some(op) => self.launch(op),
                None => sh.unreserve(false),
            }
        }
    }

    fn reap(&self, ev: *mut daos_event_t) {
        // SAFETY: every event on this queue is the first field of an Op that `launch` leaked
        // with Box::into_raw; reaping hands it back to us.
        let mut op = unsafe { Box::from_raw(ev.cast::<Op>()) };
        let rc = op.ev.ev_error;
        // SAFETY: reaped, so no longer running.
        unsafe { self.eq.fini_event(&mut op.ev) };
        if op.io.kind == IoKind::Punch {
            self.punched(op, rc);
            return;
        }
        // A write that came back after its request was given up (timed out or released): its
        // caller was told it failed, and may have refilled the buffer DAOS read it from
        // (libdaos resends an RPC from the same buffer until the engine answers). Landed or
        // not (an error may follow a resend that was applied), the key is punched, and stays
        // fenced until then.
        let late = op.io.kind == IoKind::Update && op.attempt.as_ref().is_some_and(|a| a.abandoned());
        self.release_slot(&op, !late);
        if rc != 0 && crate::daos::rc_is_trouble(rc) {
            self.shared.trouble();
        }
        if late {
            let fence = op.fence_deadline().expect("an update of a transfer is fenced");
            tracing::warn!(
                key = %op.io.key().display(),
                "a DAOS write came back after its request was reported failed ({}): punching the key (its bytes \
                 may be the buffer's later contents)",
                if rc == 0 { "landed".to_string() } else { self.shared.lib.errstr(rc) }
            );
            self.shared.note_late(op.io.key());
            self.launch_punch(Op::punch(op.io.key(), fence));
            // Counted as failed for its key, landed or not: in a chunked container the chunks of
            // the same write that landed in time are punched as a torn write's (`Posting`), so
            // the key does not keep them as a value its caller was told failed.
            op.settle(None);
            op.posting = None;
            op.finish(self.shared.lib, rc);
            return;
        }
        if let (IoKind::Fetch, 0, Some(since)) = (op.io.kind, rc, op.launched_at) {
            if self.shared.overlapped_late(op.io.key(), since) {
                // It may have read a given-up write's bytes: a miss, never those bytes.
                let e = Error::Fenced { key: op.io.key().display() };
                tracing::warn!("a fetch in flight across a write that went late: {e}");
                op.fail(e);
                return;
            }
        }
        if let (Some(r), IoKind::Update) = (&self.shared.recorder, op.io.kind) {
            if rc_is_nospace(rc) {
                r.out_of_space();
                // Eviction is making room: send the write again after a while, as long as its
                // request wants it (not past its deadline, failed or released) and the lanes run.
                let first = *op.refused_at.get_or_insert_with(Instant::now);
                let worth = r.room_expected() || first.elapsed() < NOSPACE_GRACE;
                if worth {
                    if let Some(a) = &op.attempt {
                        a.wait_for_space(first + self.shared.space_wait);
                    }
                }
                let wanted = op.attempt.as_ref().is_some_and(|a| a.wants_more());
                if worth && wanted && !self.stop.load(Ordering::Acquire) {
                    let wait = op.backoff;
                    op.backoff = (wait * 2).min(NOSPACE_RETRY_MAX);
                    self.shared.retry.lock().push((Instant::now() + wait, op));
                    return;
                }
            }
        }
        op.finish(self.shared.lib, rc);
    }

    /// Launches the punch of a key whose write landed late, outside the budget (it is rare,
    /// and must not wait behind the writes it protects). Counted as in flight on this lane.
    fn launch_punch(&self, op: Box<Op>) {
        crate::host::in_daos_add(1);
        self.inflight.fetch_add(1, Ordering::SeqCst);
        let raw = Box::into_raw(op);
        // SAFETY: as in `launch`: the boxed Op belongs to DAOS from here until reaped; on a
        // failure to launch it is ours again.
        unsafe {
            let ev = std::ptr::addr_of_mut!((*raw).ev);
            let rc = match self.eq.init_event(ev) {
                Err(_) => -1,
                Ok(()) => {
                    let rc = self.obj.launch(std::ptr::addr_of_mut!((*raw).io), ev);
                    if rc != 0 {
                        self.eq.fini_event(ev);
                    }
                    rc
                }
            };
            if rc != 0 {
                self.punched(Box::from_raw(raw), rc);
            }
        }
    }

    /// A late write's punch completed (or could not be launched): the key leaves the fence.
    /// A failed one is sent again, and after `PUNCH_TRIES` failures the key stays fenced for
    /// the engine's life (its bytes may be a refilled buffer's).
    fn punched(&self, mut op: Box<Op>, rc: i32) {
        self.inflight.fetch_sub(1, Ordering::SeqCst);
        crate::host::in_daos_sub(1);
        if rc == 0 {
            if let Some(d) = op.fence {
                self.shared.fence_leave(op.io.key(), d);
            }
            return;
        }
        op.punch_failures += 1;
        if op.punch_failures < PUNCH_TRIES && !self.stop.load(Ordering::Acquire) {
            tracing::warn!(key = %op.io.key().display(), "punching a key a late write landed in: {}; again", self.shared.lib.errstr(rc));
            self.launch_punch(op);
            return;
        }
        tracing::error!(
            key = %op.io.key().display(),
            "could not punch a key whose write landed after its request was reported failed ({}): its bytes may \
             not be what any caller wrote; this engine neither reads nor writes it again",
            self.shared.lib.errstr(rc)
        );
    }

    /// Sleeps while there is nothing to do. Returns false when it did not sleep.
    fn park(&self) -> bool {
        let mut g = self.park_lock.lock();
        self.parked.store(true, Ordering::SeqCst);
        let idle = self.shared.waiting_len.load(Ordering::SeqCst) == 0
            && self.inflight.load(Ordering::SeqCst) == 0
            && !self.stop.load(Ordering::SeqCst);
        if idle {
            let orphans = self.reaps_orphans && self.shared.orphans.count.load(Ordering::Acquire) > 0;
            self.idle.wait_for(&mut g, if orphans { PARK_REAPING } else { PARK });
            drop(g);
        }
        self.parked.store(false, Ordering::SeqCst);
        idle
    }

    fn run(&self, grace: Duration) {
        let mut reaped: Vec<*mut daos_event_t> = vec![std::ptr::null_mut(); REAP_BATCH];
        let mut stop_at: Option<Instant> = None;
        loop {
            // Held for the whole pass (orphans, launches, the poll), but not while parked: the
            // host's exit waits for every thread driving DAOS to let go (see host.rs).
            let Some(mut drive) = crate::host::drive() else {
                // The host may free the buffers of what is in flight any moment now: nothing
                // more may be copied into them, so what DAOS holds is abandoned.
                let inflight = self.inflight.load(Ordering::SeqCst);
                self.leaked.store(inflight as u64, Ordering::Release);
                if inflight > 0 {
                    tracing::debug!("host exiting: lane abandons {inflight} DAOS operation(s)");
                }
                break;
            };
            if self.reaps_orphans {
                self.shared.orphans.reap(self.shared.lib);
            }
            self.shared.requeue_due();
            if self.stop.load(Ordering::Acquire) {
                let at = *stop_at.get_or_insert_with(|| Instant::now() + grace);
                let inflight = self.inflight.load(Ordering::SeqCst);
                if inflight == 0 {
                    break;
                }
                if Instant::now() >= at {
                    self.leaked.store(inflight as u64, Ordering::Release);
                    break;
                }
            } else if self.inflight.load(Ordering::SeqCst) == 0 {
                drop(drive);
                if self.park() {
                    continue;
                }
                match crate::host::drive() {
                    Some(d) => drive = d,
                    None => continue, // the top of the loop abandons
                }
                self.launch_waiting();
            }
            match self.eq.poll(POLL_US, &mut reaped) {
                Ok(n) => reaped[..n].iter().for_each(|&ev| self.reap(ev)),
                Err(e) => {
                    tracing::error!("DAOS event queue poll failed: {e}");
                    std::thread::sleep(Duration::from_millis(10));
                }
            }
            if !self.stop.load(Ordering::Acquire) {
                self.launch_waiting();
            }
            drop(drive);
        }
    }
}

/// What the lanes tell or ask the rest of the engine.
pub struct Hooks {
    /// Eviction's view of the writes (None with eviction off).
    pub recorder: Option<Arc<Recorder>>,
    /// Told when DAOS answers in a way that says its pool map may have changed.
    pub trouble: Option<Arc<dyn Fn() + Send + Sync>>,
    /// How long after its first refusal for space a write may wait for eviction's room.
    pub space_wait: Duration,
}

pub struct Lanes {
    shared: Arc<Shared>,
    lanes: Vec<Arc<Lane>>,
    threads: Vec<JoinHandle<()>>,
    next: AtomicUsize,
    grace: Duration,
}

impl Lanes {
    pub fn start(
        lib: &'static Library,
        obj: Arc<Object>,
        n: usize,
        budget: Arc<Budget>,
        grace: Duration,
        hooks: Hooks,
    ) -> Result<Lanes, Error> {
        let Hooks { recorder, trouble, space_wait } = hooks;
        let shared = Arc::new(Shared {
            lib,
            budget,
            trouble,
            space_wait,
            waiting: Mutex::new(VecDeque::new()),
            waiting_len: AtomicUsize::new(0),
            writes: Mutex::new(HashMap::new()),
            writes_len: AtomicUsize::new(0),
            late: Mutex::new(HashMap::new()),
            late_len: AtomicUsize::new(0),
            orphans: Orphans::default(),
            recorder,
            retry: Mutex::new(Vec::new()),
        });
        // Built up in place: if a later lane fails to start, dropping `lanes` stops the earlier ones.
        let mut lanes =
            Lanes { shared: shared.clone(), lanes: Vec::new(), threads: Vec::new(), next: AtomicUsize::new(0), grace };
        for i in 0..n {
            let lane = Arc::new(Lane {
                shared: shared.clone(),
                obj: obj.clone(),
                eq: EventQueue::create(lib)?,
                inflight: AtomicUsize::new(0),
                park_lock: Mutex::new(()),
                idle: Condvar::new(),
                parked: AtomicBool::new(false),
                stop: AtomicBool::new(false),
                leaked: AtomicU64::new(0),
                reaps_orphans: i == 0,
            });
            let l = lane.clone();
            let t = std::thread::Builder::new()
                .name(format!("nixl-daos-lane{i}"))
                .spawn(move || {
                    if catch_unwind(AssertUnwindSafe(|| l.run(grace))).is_err() {
                        // Whatever it held may still be inside DAOS: treat it as left behind.
                        tracing::error!("DAOS progress thread nixl-daos-lane{i} panicked");
                        l.leaked.store(l.inflight.load(Ordering::SeqCst).max(1) as u64, Ordering::Release);
                    }
                })
                .map_err(|source| Error::Spawn { what: "a DAOS progress thread", source })?;
            lanes.lanes.push(lane);
            lanes.threads.push(t);
        }
        Ok(lanes)
    }

    pub fn submit(&self, op: Box<Op>) {
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.lanes.len();
        self.lanes[i].submit(op);
        // An op queued behind the engine-wide budget is launched by whichever lane frees a
        // slot first; lanes with nothing in flight are parked, so wake them (num_queues at most).
        if self.shared.waiting_len.load(Ordering::SeqCst) > 0 {
            self.lanes.iter().for_each(|l| l.wake());
        }
    }

    /// How busy the engine is, for the spreading decision: operations inside DAOS plus those
    /// queued behind the engine-wide budget.
    pub fn load(&self) -> usize {
        self.inflight() + self.shared.waiting_len.load(Ordering::SeqCst)
    }

    /// Operations inside DAOS (transfer RPCs, also those of requests that timed out, and
    /// punches), plus abandoned size queries not yet reaped.
    pub fn inflight(&self) -> usize {
        self.lanes.iter().map(|l| l.inflight.load(Ordering::SeqCst)).sum::<usize>()
            + self.shared.orphans.count.load(Ordering::Acquire)
    }

    /// Hands the size queries a `queryMem` gave up on to the lanes, which free them once DAOS
    /// has completed them.
    pub fn adopt_queries(&self, queries: Vec<Abandoned>) {
        self.shared.orphans.adopt(queries);
    }

    /// Stops every lane: ops still in DAOS get `grace` to complete, then are left behind, and
    /// so is their event queue (destroying a queue with RPCs in flight waits for them in real
    /// DAOS). Returns, once every lane thread has exited, how many ops were left behind.
    pub fn shutdown(&mut self) -> u64 {
        for l in &self.lanes {
            l.stop.store(true, Ordering::Release);
            let _g = l.park_lock.lock();
            l.idle.notify_all();
        }
        self.shared.fail_queued();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        // A lane that reaped a refused write just before it saw `stop` may have put it back
        // after the drain above: nothing launches it any more, so it fails now.
        self.shared.fail_queued();
        if let Some(_drive) = crate::host::drive() {
            self.shared.orphans.reap(self.shared.lib);
        }
        let orphans = self.shared.orphans.count.load(Ordering::Acquire) as u64;
        let mut leaked = orphans;
        for l in &self.lanes {
            let n = l.leaked.load(Ordering::Acquire);
            if n > 0 {
                l.eq.leak();
                // Nothing of this engine drives them any more, so nothing of theirs lands in the
                // caller's memory through us: the exit's drain must not wait for them (it did,
                // for its whole bound, after every engine that left operations behind). The
                // lane's own count, not `leaked`, which a panicked lane sets to at least 1.
                crate::host::in_daos_sub(l.inflight.load(Ordering::SeqCst));
            } else {
                l.eq.destroy();
            }
            leaked += n;
        }
        // The lanes' references to the object go with them, so it can be closed next.
        self.lanes.clear();
        if leaked > 0 {
            tracing::warn!(
                "DAOS backend shut down with {leaked} operation(s) still inside DAOS after {:?} ({orphans} of them \
                 abandoned size queries); their memory and their event queues are left allocated so a late \
                 completion cannot touch freed memory",
                self.grace,
            );
        }
        leaked
    }
}

impl Drop for Lanes {
    fn drop(&mut self) {
        if !self.threads.is_empty() {
            self.shutdown();
        }
    }
}
