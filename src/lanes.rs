// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//! I/O lanes: N DAOS event queues, each drained by one progress thread.
//!
//! DAOS progresses only inside `daos_eq_poll`, and NIXL consumers call `checkXfer` every
//! 0.1-100 ms; a thread per queue keeps RPCs (and, in daos-sim, their data copies) moving
//! between those calls, in parallel across queues. Posting threads launch operations on a
//! lane's queue directly while fewer than `max_inflight` RPCs are in flight in the whole
//! engine and the staging pool has room for the operation's buffer; the rest wait in one queue
//! shared by the lanes, and whichever lane frees a slot launches the oldest on its own queue.
//!
//! Ownership: an `Op` (its event, iods, staging buffer, key) is a `Box` that belongs to DAOS
//! from launch until its event is reaped. If the lane is torn down while DAOS still holds some
//! (a hung server), they are leaked, never freed: late completion must never touch freed
//! memory. The same holds for record fetches a `queryMem` gave up on at its deadline: they are
//! handed to the lanes ("orphans"), which reap them when DAOS completes them. DAOS never holds
//! a pointer into a caller's memory (`crate::stage`).

use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::attempt::{Attempt, Budget};
use crate::daos::io::{IoDesc, IoKind};
use crate::daos::query::Abandoned;
use crate::daos::{daos_event_t, rc_is_nospace, EventQueue, Library, Object};
use crate::error::Error;
use crate::evict::{Posting, Recorder};
use crate::stage::StagePool;

/// How long one `daos_eq_poll` may wait; bounds how late a lane notices shutdown, and how late
/// a lane launches waiting ops after another lane freed an in-flight slot or staging room.
const POLL_US: i64 = 20_000;
/// Events reaped per poll.
const REAP_BATCH: usize = 64;
/// Orphaned record fetches tested per pass of the reaping lane.
const ORPHAN_BATCH: usize = 4096;
/// Still-running orphans in a row that end a reaping pass.
const ORPHAN_MISSES: usize = 8;
/// How long the reaping lane parks while orphans remain.
const PARK_REAPING: Duration = Duration::from_millis(10);
/// Longest a parked lane sleeps (it then reaps orphans and re-checks its work).
const PARK: Duration = Duration::from_millis(100);
/// How long a lane with ops waiting for staging room (and none of its own in flight) sleeps
/// before it looks again.
const ROOM_WAIT: Duration = Duration::from_millis(2);
/// First and longest wait before a write refused for space is sent again (eviction on).
const NOSPACE_RETRY_FIRST: Duration = Duration::from_millis(50);
const NOSPACE_RETRY_MAX: Duration = Duration::from_millis(1000);
/// How long after its first refusal a write is sent again even when eviction has not (yet)
/// said space is coming: its first pass takes a moment.
const NOSPACE_GRACE: Duration = Duration::from_millis(2000);

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
}

impl Op {
    pub fn new(io: IoDesc, attempt: Option<Arc<Attempt>>, posting: Option<Arc<Posting>>) -> Box<Op> {
        Box::new(Op {
            ev: daos_event_t::default(),
            io,
            attempt,
            backoff: NOSPACE_RETRY_FIRST,
            refused_at: None,
            posting,
        })
    }

    fn daos_error(&self, lib: &Library, rc: i32) -> Error {
        let call = match self.io.kind {
            IoKind::Update => "daos_obj_update",
            IoKind::Fetch | IoKind::Record => "daos_obj_fetch",
        };
        Error::Daos { call, rc, name: lib.errstr(rc) }
    }

    /// Reports the DAOS result to the op's transfer (after `Attempt::leave_daos`): a write's
    /// as it came, a read's once its bytes verified (`IoDesc::verify`), delivered into the
    /// caller's buffers while the request still waits for them.
    fn finish(self: Box<Op>, lib: &Library, rc: i32) {
        let op = match self.io.kind {
            IoKind::Update => crate::engine::XferOp::Write,
            IoKind::Fetch | IoKind::Record => crate::engine::XferOp::Read,
        };
        if rc != 0 {
            let e = self.daos_error(lib, rc);
            tracing::debug!(key = %self.io.key().display(), "DAOS operation failed: {e}");
            if self.attempt.is_some() {
                crate::totals::rpc(op, false);
            }
            return self.fail(e);
        }
        if self.attempt.is_some() {
            crate::totals::rpc(op, true);
        }
        if self.io.kind == IoKind::Update {
            // An update is atomic: with rc 0 all of it landed.
            self.settle(Some(self.io.bytes()));
            if let Some(a) = &self.attempt {
                a.complete(Ok(()));
            }
            return;
        }
        if let Some(a) = &self.attempt {
            // SAFETY: `complete_read` runs this only while the request is live (not ended,
            // released or failed) and keeps it live until this returns, so the caller's
            // buffers are still the transfer's to write. A late answer is dropped unchecked.
            a.complete_read(self.io.key().base(), |expect| unsafe { self.io.verify_deliver(expect) }.map(|r| r.id));
        }
    }

    fn fail(self: Box<Op>, e: Error) {
        self.settle(None);
        if let Some(a) = &self.attempt {
            match self.io.kind {
                IoKind::Update => a.complete(Err(e)),
                IoKind::Fetch | IoKind::Record => a.fail_read(e),
            }
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

    /// A write of a transfer: its caller's bytes are copied into its buffer at each launch.
    fn copies_in(&self) -> bool {
        self.attempt.is_some() && self.io.kind == IoKind::Update
    }

    /// Whether its request still wants it sent (reads and writes of transfers; others always).
    fn wanted(&self) -> bool {
        self.attempt.as_ref().is_none_or(|a| a.wants_more())
    }
}

/// Record fetches a `queryMem` gave up on at its deadline, still inside DAOS. The lanes test them
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
                    tracing::debug!("testing an abandoned record fetch: {e}");
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

/// State the lanes share: the engine-wide in-flight budget, the staging pool, the queue of ops
/// waiting for either, and the orphaned record fetches.
struct Shared {
    lib: &'static Library,
    /// In-flight slots of transfer RPCs, over all lanes (`max_inflight`).
    budget: Arc<Budget>,
    /// Every op's buffer comes from here (`stage_bytes`).
    stage: Arc<StagePool>,
    /// Told when DAOS answers in a way that says its pool map may have changed.
    trouble: Option<Arc<dyn Fn() + Send + Sync>>,
    /// How long after its first refusal for space a write may wait for eviction's room.
    space_wait: Duration,
    waiting: Mutex<VecDeque<Box<Op>>>,
    /// Length of `waiting`, readable without its lock: new ops go straight to DAOS only when
    /// nothing waits, so they never overtake queued ones.
    waiting_len: AtomicUsize,
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
        self.queue(due);
    }

    /// Appends ops to the waiting queue, behind those already there.
    fn queue(&self, ops: impl IntoIterator<Item = Box<Op>>) {
        let mut w = self.waiting.lock();
        w.extend(ops);
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

    /// Takes an in-flight slot and the op's staging buffer, if both are free (false: it waits
    /// for them). An error, holding neither: the buffer's memory cannot be had, and the op
    /// fails rather than wait for memory that may never come.
    fn reserve(&self, op: &mut Op) -> Result<bool, Error> {
        if !self.budget.take() {
            return Ok(false);
        }
        let need = op.io.stage_len();
        if need > 0 {
            match self.stage.try_take(need) {
                Ok(Some(buf)) => op.io.attach(buf),
                taken => {
                    self.budget.give(1);
                    return taken.map(|_| false);
                }
            }
        }
        crate::host::in_daos_add(1);
        Ok(true)
    }

    /// Gives back what `reserve` took; `slot_returned`: the budget's slot went back already
    /// (its request ended), only the exit's count is left.
    fn unreserve(&self, slot_returned: bool) {
        if !slot_returned {
            self.budget.give(1);
        }
        crate::host::in_daos_sub(1);
    }

    fn trouble(&self) {
        if let Some(t) = &self.trouble {
            t();
        }
    }
}

/// What `Lane::launch_next` did.
enum Next {
    /// Launched the oldest waiting op (true: it copied a write's bytes in first), or dropped
    /// it (its request no longer wanted it) or failed it (no memory for its staging).
    Launched(bool),
    Empty,
    /// The oldest waits for an in-flight slot or staging room.
    NoRoom,
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
    /// This lane also reaps the record fetches a queryMem gave up on (lane 0).
    reaps_orphans: bool,
}

impl Lane {
    /// Launches `op` now; it holds one engine-wide in-flight slot and its staging buffer
    /// already (`Shared::reserve`), and gives the slot back if the op does not reach DAOS.
    fn launch(&self, mut op: Box<Op>) {
        let sh = &self.shared;
        if let Some(a) = op.attempt.clone() {
            // Decided by the attempt: once it was released, reposted, failed or timed out,
            // none of its folds reaches DAOS any more, and a write's copy of the caller's
            // bytes runs only before that (what ends the request waits for a copy running).
            let mut refused = None;
            let charge = op.io.stage_charge();
            let launched = a.begin_launch(charge, || {
                if op.copies_in() {
                    // SAFETY: the request is live and stays so while this runs (begin_launch),
                    // so the caller's buffers are still the transfer's to read.
                    if let Err(e) = unsafe { op.io.stage_in() } {
                        refused = Some(e);
                    }
                }
                refused.is_none()
            });
            if !launched {
                sh.unreserve(false);
                match refused {
                    // The caller's bytes could not be copied (a GPU copy failed): the fold
                    // fails, and with it the request; nothing of it reached DAOS.
                    Some(e) => op.fail(e),
                    None => op.skip(),
                }
                return;
            }
        }
        self.inflight.fetch_add(1, Ordering::SeqCst);
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
    fn not_launched(&self, mut op: Box<Op>, rc: Result<i32, Error>) {
        self.release_slot(&mut op);
        match rc {
            Ok(rc) => op.finish(self.shared.lib, rc),
            Err(e) => op.fail(e),
        }
    }

    /// Gives back the in-flight slot a launched op held; one its request gave back already
    /// (it ended while DAOS held the op) leaves its staging buffer to the owed allowance.
    fn release_slot(&self, op: &mut Op) {
        self.inflight.fetch_sub(1, Ordering::SeqCst);
        let charge = op.io.stage_charge();
        let returned = op.attempt.as_ref().is_some_and(|a| a.leave_daos(charge));
        if returned {
            op.io.stage_owed();
        }
        self.shared.unreserve(returned);
    }

    fn submit(&self, mut op: Box<Op>) {
        let sh = &self.shared;
        // Held while this thread may launch into DAOS (see host.rs).
        let drive = crate::host::drive();
        if self.stop.load(Ordering::Acquire) || drive.is_none() {
            op.fail(Error::ShuttingDown);
            return;
        }
        if sh.waiting_len.load(Ordering::SeqCst) == 0 {
            match sh.reserve(&mut op) {
                Ok(true) => {
                    self.launch(op);
                    self.wake();
                    return;
                }
                Ok(false) => {}
                Err(e) => return op.fail(e),
            }
        }
        sh.queue([op]);
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

    /// Launches waiting ops, oldest first, while the engine has slots and staging room; those
    /// whose request no longer wants them (failed, released, or past its deadline) are dropped
    /// without taking either. Stops after the first whose bytes it copied in, so that the lane
    /// polls between two copies: DAOS moves the bytes of the RPCs this lane launched (a
    /// server's pull of a write's) only inside its poll, and a lane copying one chunk after
    /// another would hold them all back. Returns what stopped it.
    fn launch_some(&self) -> Next {
        loop {
            match self.launch_next() {
                Next::Launched(false) => {}
                other => return other,
            }
        }
    }

    /// Launches (or drops) the oldest waiting op on this lane's queue.
    fn launch_next(&self) -> Next {
        let sh = &self.shared;
        if sh.waiting_len.load(Ordering::SeqCst) == 0 {
            return Next::Empty;
        }
        let (op, reserved) = {
            let mut w = sh.waiting.lock();
            let Some(front) = w.front_mut() else { return Next::Empty };
            let reserved = match front.wanted() {
                true => match sh.reserve(front) {
                    Ok(false) => return Next::NoRoom,
                    r => r,
                },
                false => Ok(false),
            };
            let op = w.pop_front().expect("the front is there");
            sh.waiting_len.store(w.len(), Ordering::SeqCst);
            (op, reserved)
        };
        let copied = matches!(reserved, Ok(true)) && op.copies_in();
        match reserved {
            Ok(true) => self.launch(op),
            Ok(false) => op.skip(),
            Err(e) => op.fail(e),
        }
        Next::Launched(copied)
    }

    fn reap(&self, ev: *mut daos_event_t) {
        // SAFETY: every event on this queue is the first field of an Op that `launch` leaked
        // with Box::into_raw; reaping hands it back to us.
        let mut op = unsafe { Box::from_raw(ev.cast::<Op>()) };
        let rc = op.ev.ev_error;
        // SAFETY: reaped, so no longer running.
        unsafe { self.eq.fini_event(&mut op.ev) };
        self.release_slot(&mut op);
        if rc != 0 && crate::daos::rc_is_trouble(rc) {
            self.shared.trouble();
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
                    // It waits without its staging buffer, so a space episode cannot hold the
                    // pool's room while other requests (reads among them) wait for it.
                    op.io.detach();
                    let wait = op.backoff;
                    op.backoff = (wait * 2).min(NOSPACE_RETRY_MAX);
                    self.shared.retry.lock().push((Instant::now() + wait, op));
                    return;
                }
            }
        }
        op.finish(self.shared.lib, rc);
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
        let mut more = Next::Empty;
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
                more = self.launch_some();
                if matches!(more, Next::NoRoom) && self.inflight.load(Ordering::SeqCst) == 0 {
                    // Waiting for staging room that other lanes' ops hold: nothing to poll here.
                    drop(drive);
                    std::thread::sleep(ROOM_WAIT);
                    continue;
                }
            }
            // Ops left waiting after a copy: one pass of progress, then the next.
            let wait = match more {
                Next::Launched(_) => 0,
                Next::Empty | Next::NoRoom => POLL_US,
            };
            match self.eq.poll(wait, &mut reaped) {
                Ok(n) => reaped[..n].iter().for_each(|&ev| self.reap(ev)),
                Err(e) => {
                    tracing::error!("DAOS event queue poll failed: {e}");
                    std::thread::sleep(Duration::from_millis(10));
                }
            }
            more = if self.stop.load(Ordering::Acquire) { Next::Empty } else { self.launch_some() };
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
    /// Where every op's staging buffer comes from.
    pub stage: Arc<StagePool>,
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
        let Hooks { recorder, trouble, space_wait, stage } = hooks;
        let shared = Arc::new(Shared {
            lib,
            budget,
            stage,
            trouble,
            space_wait,
            waiting: Mutex::new(VecDeque::new()),
            waiting_len: AtomicUsize::new(0),
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

    /// Submits the folds of one posting. When two or more of them are writes whose bytes are
    /// still to be copied in, the copies are shared out: the folds join the waiting queue,
    /// the lanes with nothing in flight are woken to take some, and this thread takes the
    /// others, launching each on the next lane's queue. A value of several chunks is then
    /// copied on several cores at once instead of one after another on the posting thread.
    // Boxed one by one: each Op goes to DAOS by address and must never move.
    #[allow(clippy::vec_box)]
    pub fn submit_all(&self, ops: Vec<Box<Op>>) {
        if ops.iter().filter(|op| op.copies_in()).count() < 2 {
            ops.into_iter().for_each(|op| self.submit(op));
            return;
        }
        // Held while this thread may launch into DAOS (see host.rs).
        let drive = crate::host::drive();
        if drive.is_none() || self.lanes.iter().any(|l| l.stop.load(Ordering::Acquire)) {
            ops.into_iter().for_each(|op| op.fail(Error::ShuttingDown));
            return;
        }
        let n = ops.len();
        self.shared.queue(ops);
        self.lanes.iter().for_each(|l| l.wake());
        // As many launches as this posting brought (oldest first, so possibly others'), so
        // that a post never copies for long on behalf of other requests.
        for _ in 0..n {
            let lane = &self.lanes[self.next.fetch_add(1, Ordering::Relaxed) % self.lanes.len()];
            match lane.launch_next() {
                Next::Launched(_) => lane.wake(),
                // The lanes launch what waits for room once earlier ops give theirs back.
                Next::Empty | Next::NoRoom => break,
            }
        }
    }

    /// Operations inside DAOS (transfer RPCs, also those of requests that ended), plus
    /// abandoned record fetches not yet reaped.
    pub fn inflight(&self) -> usize {
        self.lanes.iter().map(|l| l.inflight.load(Ordering::SeqCst)).sum::<usize>()
            + self.shared.orphans.count.load(Ordering::Acquire)
    }

    /// Hands the record fetches a `queryMem` gave up on to the lanes, which free them once DAOS
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
                 abandoned record fetches); their memory and their event queues are left allocated so a late \
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
