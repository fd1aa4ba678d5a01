//! I/O lanes: N DAOS event queues, each drained by one progress thread.
//!
//! DAOS progresses only inside `daos_eq_poll`, and NIXL consumers call `checkXfer` every
//! 0.1-100 ms; a thread per queue keeps RPCs (and, in daos-sim, their data copies) moving
//! between those calls, in parallel across queues. Posting threads launch operations on a
//! lane's queue directly; a lane holds at most `max_inflight` of them, the rest wait in its
//! queue and are launched by the lane as completions free room.
//!
//! Ownership: an `Op` (its event, iods, sgls, key) is a `Box` that belongs to DAOS from launch
//! until its event is reaped. If the lane is torn down while DAOS still holds some (a hung
//! server), they are leaked, never freed: late completion must never touch freed memory.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::daos::io::{Extent, IoDesc, IoKind};
use crate::daos::{daos_event_t, EventQueue, Library, Object};
use crate::error::Error;
use crate::key::ObjectKey;

/// How long one `daos_eq_poll` may wait; bounds how late a lane notices shutdown.
const POLL_US: i64 = 20_000;
/// Events reaped per poll.
const REAP_BATCH: usize = 64;

/// One posting of a transfer request: its folds in flight, first error, deadline.
pub struct Attempt {
    remaining: AtomicUsize,
    failed: AtomicBool,
    error: Mutex<Option<Error>>,
    pub deadline: Instant,
    pub reported: AtomicBool,
}

impl Attempt {
    pub fn new(ops: usize, deadline: Instant) -> Attempt {
        Attempt {
            remaining: AtomicUsize::new(ops),
            failed: AtomicBool::new(false),
            error: Mutex::new(None),
            deadline,
            reported: AtomicBool::new(false),
        }
    }

    pub fn remaining(&self) -> usize {
        self.remaining.load(Ordering::Acquire)
    }

    pub fn failed(&self) -> bool {
        self.failed.load(Ordering::Acquire)
    }

    /// The first error, taken (reported once).
    pub fn take_error(&self) -> Option<Error> {
        self.error.lock().unwrap().take()
    }

    fn complete(&self, result: Result<(), Error>) {
        if let Err(e) = result {
            let mut slot = self.error.lock().unwrap();
            if !self.failed.swap(true, Ordering::AcqRel) {
                *slot = Some(e);
            }
        }
        self.remaining.fetch_sub(1, Ordering::AcqRel);
    }
}

/// One DAOS operation. `#[repr(C)]` with the event first: the event pointer DAOS hands back
/// from `daos_eq_poll` is the address of the whole `Op`.
#[repr(C)]
pub struct Op {
    ev: daos_event_t,
    io: IoDesc,
    key: ObjectKey,
    /// The transfer it belongs to; None for a size query driven by its caller.
    attempt: Option<Arc<Attempt>>,
}

impl Op {
    pub fn new(kind: IoKind, key: &ObjectKey, extents: &[Extent], attempt: Option<Arc<Attempt>>) -> Box<Op> {
        Box::new(Op { ev: daos_event_t::default(), io: IoDesc::new(kind, key.as_bytes(), extents), key: key.clone(), attempt })
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
                None => return Err(Error::NoSuchKey { key: self.key.display() }),
                Some(got) if got < self.io.bytes() => {
                    return Err(Error::ShortRead { key: self.key.display(), want: self.io.bytes(), got })
                }
                Some(_) => {}
            }
        }
        Ok(())
    }

    /// What a completed size query says: the size, or None when the key does not exist.
    fn size_result(&self, lib: &Library, rc: i32) -> Result<Option<u64>, Error> {
        match rc {
            0 => Ok(Some(self.io.size())),
            rc if rc == -crate::daos::sys::DER_NONEXIST => Ok(None),
            rc => Err(self.daos_error(lib, rc)),
        }
    }

    /// Reports the DAOS result to the op's transfer.
    fn finish(self: Box<Op>, lib: &Library, rc: i32) {
        let result = self.xfer_result(lib, rc);
        if let Err(e) = &result {
            tracing::debug!(key = %self.key.display(), "DAOS operation failed: {e}");
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
                match lib.init_event_unqueued(&mut (*raw).ev) {
                    Err(e) => {
                        drop(Box::from_raw(raw));
                        return Err(e);
                    }
                    Ok(()) => obj.launch(&mut (*raw).io, &mut (*raw).ev),
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
        let left = deadline.saturating_duration_since(Instant::now());
        // SAFETY: raw is launched and not yet reaped.
        let done = unsafe { lib.event_test(&mut (*raw).ev, left.as_micros().min(i64::MAX as u128) as i64)? };
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
    idle: Condvar,
    /// Set by the lane thread while it sleeps on `idle` with nothing in flight; submitters wake
    /// it only then, so a busy lane costs no futex call per operation.
    parked: AtomicBool,
    stop: AtomicBool,
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
        unsafe {
            let eq = &self.eq;
            if let Err(e) = eq.init_event(&mut (*raw).ev) {
                self.inflight.fetch_sub(1, Ordering::AcqRel);
                Box::from_raw(raw).fail(e);
                return;
            }
            let rc = self.obj.launch(&mut (*raw).io, &mut (*raw).ev);
            if rc != 0 {
                // Not launched: the event never entered the queue.
                eq.fini_event(&mut (*raw).ev);
                self.inflight.fetch_sub(1, Ordering::AcqRel);
                Box::from_raw(raw).finish(self.lib, rc);
            }
        }
    }

    fn submit(&self, op: Box<Op>) {
        if self.stop.load(Ordering::Acquire) {
            op.fail(Error::ShuttingDown);
            return;
        }
        if self.inflight.fetch_add(1, Ordering::SeqCst) < self.max_inflight {
            self.launch(op);
        } else {
            self.inflight.fetch_sub(1, Ordering::SeqCst);
            self.waiting.lock().unwrap().push_back(op);
        }
        // The lane parks only after seeing nothing in flight and nothing waiting (SeqCst on
        // both sides): either it saw our op, or we see it parked and wake it. Taking the lock
        // orders the notification after its check.
        if self.parked.load(Ordering::SeqCst) {
            let _g = self.waiting.lock().unwrap();
            self.idle.notify_one();
        }
    }

    /// Launches waiting ops while there is room.
    fn launch_waiting(&self) {
        loop {
            if self.inflight.fetch_add(1, Ordering::AcqRel) >= self.max_inflight {
                self.inflight.fetch_sub(1, Ordering::AcqRel);
                return;
            }
            let op = self.waiting.lock().unwrap().pop_front();
            match op {
                Some(op) => self.launch(op),
                None => {
                    self.inflight.fetch_sub(1, Ordering::AcqRel);
                    return;
                }
            }
        }
    }

    fn run(&self, grace: Duration) {
        let eq = &self.eq;
        let mut reaped: Vec<*mut daos_event_t> = vec![std::ptr::null_mut(); REAP_BATCH];
        let mut stop_at: Option<Instant> = None;
        loop {
            if self.stop.load(Ordering::Acquire) {
                for op in self.waiting.lock().unwrap().drain(..) {
                    op.fail(Error::ShuttingDown);
                }
                let at = *stop_at.get_or_insert_with(|| Instant::now() + grace);
                if self.inflight.load(Ordering::Acquire) == 0 {
                    break;
                }
                if Instant::now() >= at {
                    let n = self.inflight.load(Ordering::Acquire) as u64;
                    self.leaked.store(n, Ordering::Release);
                    break;
                }
            } else if self.inflight.load(Ordering::SeqCst) == 0 {
                let g = self.waiting.lock().unwrap();
                self.parked.store(true, Ordering::SeqCst);
                if g.is_empty() && self.inflight.load(Ordering::SeqCst) == 0 && !self.stop.load(Ordering::SeqCst) {
                    let g = self.idle.wait_timeout(g, Duration::from_millis(100)).unwrap().0;
                    self.parked.store(false, Ordering::SeqCst);
                    drop(g);
                    continue;
                }
                self.parked.store(false, Ordering::SeqCst);
                drop(g);
                self.launch_waiting();
            }
            match eq.poll(POLL_US, &mut reaped) {
                Ok(n) => {
                    for &ev in &reaped[..n] {
                        // SAFETY: every event on this queue is the first field of an Op that
                        // `launch` leaked with Box::into_raw; reaping hands it back to us.
                        let op = unsafe { Box::from_raw(ev.cast::<Op>()) };
                        let rc = op.ev.ev_error;
                        let mut op = op;
                        unsafe { eq.fini_event(&mut op.ev) };
                        self.inflight.fetch_sub(1, Ordering::AcqRel);
                        op.finish(self.lib, rc);
                    }
                }
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
        let mut lanes = Vec::new();
        let mut threads = Vec::new();
        for i in 0..n {
            let eq = EventQueue::create(lib)?;
            let lane = Arc::new(Lane {
                lib,
                eq,
                obj: obj.clone(),
                max_inflight: per_lane,
                inflight: AtomicUsize::new(0),
                waiting: Mutex::new(VecDeque::new()),
                idle: Condvar::new(),
                parked: AtomicBool::new(false),
                stop: AtomicBool::new(false),
                leaked: AtomicU64::new(0),
            });
            let l = lane.clone();
            let t = std::thread::Builder::new()
                .name(format!("nixl-daos-lane{i}"))
                .spawn(move || l.run(grace))
                .map_err(|e| Error::InvalidArg(format!("cannot start DAOS progress thread: {e}")))?;
            lanes.push(lane);
            threads.push(t);
        }
        Ok(Lanes { lanes, threads, next: AtomicUsize::new(0), grace })
    }

    pub fn submit(&self, op: Box<Op>) {
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.lanes.len();
        self.lanes[i].submit(op);
    }

    pub fn inflight(&self) -> usize {
        self.lanes.iter().map(|l| l.inflight.load(Ordering::Acquire)).sum()
    }

    /// Stops every lane: ops still in DAOS get `grace` to complete, then are left behind.
    /// Returns when every lane thread has exited.
    pub fn shutdown(&mut self) {
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
            leaked += n;
            l.eq.destroy(n > 0);
        }
        if leaked > 0 {
            tracing::warn!(
                "DAOS backend shut down with {leaked} operation(s) still inside DAOS after {:?}; \
                 their memory is left allocated so a late completion cannot touch freed memory",
                self.grace
            );
        }
    }
}

impl Drop for Lanes {
    fn drop(&mut self) {
        if !self.threads.is_empty() {
            self.shutdown();
        }
    }
}
