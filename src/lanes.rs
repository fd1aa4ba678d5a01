//! I/O lanes: N DAOS event queues, each drained by one progress thread.
//!
//! DAOS progresses only inside `daos_eq_poll`, and NIXL consumers call `checkXfer` every
//! 0.1-100 ms; a thread per queue keeps RPCs (and, in daos-sim, their data copies) moving
//! between those calls, in parallel across queues. Posting threads launch operations on a
//! lane's queue directly; a lane holds at most its share of `max_inflight`, the rest wait in its
//! queue and are launched by the lane as completions free room.
//!
//! Ownership: an `Op` (its event, iods, sgls, key) is a `Box` that belongs to DAOS from launch
//! until its event is reaped. If the lane is torn down while DAOS still holds some (a hung
//! server), they are leaked, never freed: late completion must never touch freed memory.

use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::attempt::Attempt;
use crate::daos::io::{Extent, IoDesc, IoKind};
use crate::daos::{daos_event_t, EventQueue, Library, Object};
use crate::error::Error;
use crate::key::ObjectKey;

/// How long one `daos_eq_poll` may wait; bounds how late a lane notices shutdown.
const POLL_US: i64 = 20_000;
/// Events reaped per poll.
const REAP_BATCH: usize = 64;
/// Longest single `daos_event_test` wait of a size query.
const TEST_SLICE: Duration = Duration::from_millis(1);

/// One DAOS operation. `#[repr(C)]` with the event first: the event pointer DAOS hands back
/// from `daos_eq_poll` is the address of the whole `Op`.
#[repr(C)]
pub struct Op {
    ev: daos_event_t,
    io: IoDesc,
    /// The transfer it belongs to; None for a size query driven by its caller.
    attempt: Option<Arc<Attempt>>,
}

impl Op {
    pub fn new(kind: IoKind, key: &ObjectKey, extents: &[Extent], attempt: Option<Arc<Attempt>>) -> Box<Op> {
        Box::new(Op { ev: daos_event_t::default(), io: IoDesc::new(kind, key.clone(), extents), attempt })
    }

    fn daos_error(&self, lib: &Library, rc: i32) -> Error {
        let call = match self.io.kind {
            IoKind::Update => "daos_obj_update",
            IoKind::Fetch => "daos_obj_fetch",
            IoKind::Size => "daos_obj_query_key",
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

    /// What a completed size query says: the size, or None when the key does not exist. DAOS
    /// 2.8 answers a never-written key with success and an empty recx (the client merges the
    /// shards' `DER_NONEXIST` into rc 0), so an empty recx means absent; a written key always
    /// has at least one record. `DER_NONEXIST` is kept as absent too (older clients).
    fn size_result(&self, lib: &Library, rc: i32) -> Result<Option<u64>, Error> {
        match rc {
            0 => Ok(self.io.size()),
            rc if rc == -crate::daos::sys::DER_NONEXIST => Ok(None),
            rc => Err(self.daos_error(lib, rc)),
        }
    }

    /// Reports the DAOS result to the op's transfer.
    fn finish(self: Box<Op>, lib: &Library, rc: i32) {
        let result = self.xfer_result(lib, rc);
        if let Err(e) = &result {
            tracing::debug!(key = %self.io.key().display(), "DAOS operation failed: {e}");
        }
        if let Some(a) = &self.attempt {
            a.complete(result);
        }
    }

    fn fail(self: Box<Op>, e: Error) {
        if let Some(a) = &self.attempt {
            a.complete(Err(e));
        }
    }

    /// Whether this op, not yet handed to DAOS, should still be.
    fn wanted(&self) -> bool {
        self.attempt.as_ref().is_none_or(|a| a.wants_launch())
    }

    /// Completes an op dropped before it reached DAOS.
    fn skip(self: Box<Op>) {
        if let Some(a) = &self.attempt {
            a.skip();
        }
    }
}

/// Sizes of `keys` (None: absent), queried from the calling thread: up to `window` queries in
/// flight at once on events outside any queue, progressed with `daos_event_test` here.
/// queryMem is synchronous for its caller anyway, and driving progress in the caller spares a
/// hand-off to a lane thread and back per key (LMCache calls it from 16 threads at once).
/// Queries still inside DAOS at `deadline` are left to it (their memory stays allocated).
pub fn query_sizes(lib: &'static Library, obj: &Object, keys: &[ObjectKey], window: usize, deadline: Instant) -> Result<Vec<Option<u64>>, Error> {
    let mut sizes = vec![None; keys.len()];
    let mut first_err: Option<Error> = None;
    let mut inflight: VecDeque<(usize, *mut Op)> = VecDeque::new();
    let mut next = 0;
    while next < keys.len() || !inflight.is_empty() {
        while next < keys.len() && inflight.len() < window.max(1) {
            let raw = Box::into_raw(Op::new(IoKind::Size, &keys[next], &[], None));
            // SAFETY: raw is a live boxed Op; from launch until reaped it belongs to DAOS.
            let rc = unsafe {
                match lib.init_event_unqueued(std::ptr::addr_of_mut!((*raw).ev)) {
                    Err(e) => {
                        drop(Box::from_raw(raw));
                        return Err(e);
                    }
                    Ok(()) => obj.launch(std::ptr::addr_of_mut!((*raw).io), std::ptr::addr_of_mut!((*raw).ev)),
                }
            };
            if rc == 0 {
                inflight.push_back((next, raw));
            } else {
                // SAFETY: not launched, so not DAOS's.
                let mut op = unsafe { Box::from_raw(raw) };
                unsafe { lib.fini_event(&mut op.ev) };
                first_err.get_or_insert(op.daos_error(lib, rc));
            }
            next += 1;
        }
        let Some(&(index, raw)) = inflight.front() else { continue };
        // Short slices: another thread progressing the same DAOS context may complete our
        // event behind our back, and CaRT would otherwise sleep out a long slice.
        let left = deadline.saturating_duration_since(Instant::now()).min(TEST_SLICE);
        // SAFETY: raw is launched and not yet reaped.
        let done = unsafe { lib.event_test(std::ptr::addr_of_mut!((*raw).ev), left.as_micros() as i64)? };
        if done {
            inflight.pop_front();
            // SAFETY: reaped: DAOS is done with it.
            let mut op = unsafe { Box::from_raw(raw) };
            let rc = op.ev.ev_error;
            unsafe { lib.fini_event(&mut op.ev) };
            match op.size_result(lib, rc) {
                Ok(size) => sizes[index] = size,
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
        } else if Instant::now() >= deadline {
            let missing = inflight.len() + (keys.len() - next);
            // The launched ones stay allocated: DAOS may still complete them.
            return Err(Error::Timeout { what: format!("{missing} of {} key queries", keys.len()), ms: 0 });
        }
    }
    match first_err {
        Some(e) => Err(e),
        None => Ok(sizes),
    }
}

struct Lane {
    lib: &'static Library,
    eq: EventQueue,
    obj: Arc<Object>,
    max_inflight: usize,
    inflight: AtomicUsize,
    waiting: Mutex<VecDeque<Box<Op>>>,
    /// Length of `waiting`, readable without its lock: new ops go straight to DAOS only when
    /// nothing waits, so they never overtake queued ones.
    waiting_len: AtomicUsize,
    idle: Condvar,
    /// Set by the lane thread while it sleeps on `idle` with nothing in flight; submitters wake
    /// it only then, so a busy lane costs no futex call per operation.
    parked: AtomicBool,
    stop: AtomicBool,
    /// Ops still inside DAOS when the lane gave up on them at shutdown (left allocated).
    leaked: AtomicU64,
}

// SAFETY: the raw pointers inside waiting ops are owned by them (see Op); the EQ handle is
// usable from any thread.
unsafe impl Send for Lane {}
unsafe impl Sync for Lane {}

impl Lane {
    /// Launches `op` now; it owns one in-flight slot already.
    fn launch(&self, op: Box<Op>) {
        let raw = Box::into_raw(op);
        // SAFETY: raw is a live, pinned (boxed) Op; from here until reaped it belongs to DAOS.
        // Pointers into it are derived from `raw` itself, so the reaped event pointer carries
        // the whole Op's provenance back.
        unsafe {
            let ev = std::ptr::addr_of_mut!((*raw).ev);
            if let Err(e) = self.eq.init_event(ev) {
                self.inflight.fetch_sub(1, Ordering::SeqCst);
                Box::from_raw(raw).fail(e);
                return;
            }
            let rc = self.obj.launch(std::ptr::addr_of_mut!((*raw).io), ev);
            if rc != 0 {
                // Not launched: the event never entered the queue.
                self.eq.fini_event(ev);
                self.inflight.fetch_sub(1, Ordering::SeqCst);
                Box::from_raw(raw).finish(self.lib, rc);
            }
        }
    }

    /// Takes an in-flight slot if one is free.
    fn reserve(&self) -> bool {
        if self.inflight.fetch_add(1, Ordering::SeqCst) < self.max_inflight {
            true
        } else {
            self.inflight.fetch_sub(1, Ordering::SeqCst);
            false
        }
    }

    fn submit(&self, op: Box<Op>) {
        if self.stop.load(Ordering::Acquire) {
            op.fail(Error::ShuttingDown);
            return;
        }
        if self.waiting_len.load(Ordering::SeqCst) == 0 && self.reserve() {
            self.launch(op);
        } else {
            let mut w = self.waiting.lock().unwrap();
            w.push_back(op);
            self.waiting_len.store(w.len(), Ordering::SeqCst);
        }
        // The lane parks only after seeing nothing in flight and nothing waiting (SeqCst on
        // both sides): either it saw our op, or we see it parked and wake it. Taking the lock
        // orders the notification after its check.
        if self.parked.load(Ordering::SeqCst) {
            let _g = self.waiting.lock().unwrap();
            self.idle.notify_one();
        }
    }

    /// Launches waiting ops while there is room; drops those whose request no longer wants
    /// them (failed, released, or past its deadline) without sending them to DAOS.
    fn launch_waiting(&self) {
        while self.waiting_len.load(Ordering::SeqCst) > 0 && self.reserve() {
            let op = {
                let mut w = self.waiting.lock().unwrap();
                let op = w.pop_front();
                self.waiting_len.store(w.len(), Ordering::SeqCst);
                op
            };
            match op {
                Some(op) if op.wanted() => self.launch(op),
                other => {
                    self.inflight.fetch_sub(1, Ordering::SeqCst);
                    if let Some(op) = other {
                        op.skip();
                    }
                }
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
        self.inflight.fetch_sub(1, Ordering::SeqCst);
        op.finish(self.lib, rc);
    }

    /// Sleeps while there is nothing to do. Returns false when it did not sleep.
    fn park(&self) -> bool {
        let g = self.waiting.lock().unwrap();
        self.parked.store(true, Ordering::SeqCst);
        let idle = g.is_empty() && self.inflight.load(Ordering::SeqCst) == 0 && !self.stop.load(Ordering::SeqCst);
        if idle {
            drop(self.idle.wait_timeout(g, Duration::from_millis(100)).unwrap());
        }
        self.parked.store(false, Ordering::SeqCst);
        idle
    }

    fn run(&self, grace: Duration) {
        let mut reaped: Vec<*mut daos_event_t> = vec![std::ptr::null_mut(); REAP_BATCH];
        let mut stop_at: Option<Instant> = None;
        loop {
            if self.stop.load(Ordering::Acquire) {
                let drained: Vec<_> = self.waiting.lock().unwrap().drain(..).collect();
                self.waiting_len.store(0, Ordering::SeqCst);
                for op in drained {
                    op.fail(Error::ShuttingDown);
                }
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
                if self.park() {
                    continue;
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
            self.launch_waiting();
        }
    }
}

pub struct Lanes {
    lanes: Vec<Arc<Lane>>,
    threads: Vec<JoinHandle<()>>,
    next: AtomicUsize,
    grace: Duration,
}

impl Lanes {
    pub fn start(lib: &'static Library, obj: Arc<Object>, n: usize, max_inflight: usize, grace: Duration) -> Result<Lanes, Error> {
        let per_lane = max_inflight.div_ceil(n).max(1);
        // Built up in place: if a later lane fails to start, dropping `lanes` stops the earlier ones.
        let mut lanes = Lanes { lanes: Vec::new(), threads: Vec::new(), next: AtomicUsize::new(0), grace };
        for i in 0..n {
            let lane = Arc::new(Lane {
                lib,
                eq: EventQueue::create(lib)?,
                obj: obj.clone(),
                max_inflight: per_lane,
                inflight: AtomicUsize::new(0),
                waiting: Mutex::new(VecDeque::new()),
                waiting_len: AtomicUsize::new(0),
                idle: Condvar::new(),
                parked: AtomicBool::new(false),
                stop: AtomicBool::new(false),
                leaked: AtomicU64::new(0),
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
                .map_err(|e| Error::InvalidArg(format!("cannot start DAOS progress thread: {e}")))?;
            lanes.lanes.push(lane);
            lanes.threads.push(t);
        }
        Ok(lanes)
    }

    pub fn submit(&self, op: Box<Op>) {
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.lanes.len();
        self.lanes[i].submit(op);
    }

    pub fn inflight(&self) -> usize {
        self.lanes.iter().map(|l| l.inflight.load(Ordering::SeqCst)).sum()
    }

    /// Stops every lane: ops still in DAOS get `grace` to complete, then are left behind, and
    /// so is their event queue (destroying a queue with RPCs in flight waits for them in real
    /// DAOS). Returns, once every lane thread has exited, how many ops were left behind.
    pub fn shutdown(&mut self) -> u64 {
        for l in &self.lanes {
            l.stop.store(true, Ordering::Release);
            let _g = l.waiting.lock().unwrap();
            l.idle.notify_all();
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        let mut leaked = 0;
        for l in &self.lanes {
            let n = l.leaked.load(Ordering::Acquire);
            if n > 0 {
                l.eq.leak();
            } else {
                l.eq.destroy();
            }
            leaked += n;
        }
        // The lanes' references to the object go with them, so it can be closed next.
        self.lanes.clear();
        if leaked > 0 {
            tracing::warn!(
                "DAOS backend shut down with {} operation(s) still inside DAOS after {:?}; their memory \
                 and their event queues are left allocated so a late completion cannot touch freed memory",
                leaked,
                self.grace
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
