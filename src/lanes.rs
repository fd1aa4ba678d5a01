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

use crate::daos::io::{IoDesc, IoKind};
use crate::daos::{daos_event_t, EventQueue, Library, Object};
use crate::error::Error;
use crate::key::ObjectKey;

/// How long one `daos_eq_poll` may wait; bounds how late a lane notices shutdown.
const POLL_US: i64 = 20_000;
/// Events reaped per poll.
const REAP_BATCH: usize = 64;

/// What a finished operation reports to.
pub enum Sink {
    Xfer(Arc<Attempt>),
    Size { batch: Arc<SizeBatch>, index: usize },
}

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

/// Sizes of many keys, answered concurrently across lanes.
pub struct SizeBatch {
    state: Mutex<(usize, Vec<Option<u64>>, Option<Error>)>,
    done: Condvar,
}

impl SizeBatch {
    pub fn new(n: usize) -> SizeBatch {
        SizeBatch { state: Mutex::new((n, vec![None; n], None)), done: Condvar::new() }
    }

    fn set(&self, index: usize, result: Result<Option<u64>, Error>) {
        let mut st = self.state.lock().unwrap();
        match result {
            Ok(size) => st.1[index] = size,
            Err(e) => {
                if st.2.is_none() {
                    st.2 = Some(e);
                }
            }
        }
        st.0 -= 1;
        if st.0 == 0 {
            self.done.notify_all();
        }
    }

    /// Waits until every answer is in, or `deadline`. Err(n) when n answers are missing.
    pub fn wait(&self, deadline: Instant) -> Result<Result<Vec<Option<u64>>, Error>, usize> {
        let mut st = self.state.lock().unwrap();
        while st.0 > 0 {
            let now = Instant::now();
            if now >= deadline {
                return Err(st.0);
            }
            st = self.done.wait_timeout(st, deadline - now).unwrap().0;
        }
        Ok(match st.2.take() {
            Some(e) => Err(e),
            None => Ok(std::mem::take(&mut st.1)),
        })
    }
}

/// One DAOS operation. `#[repr(C)]` with the event first: the event pointer DAOS hands back
/// from `daos_eq_poll` is the address of the whole `Op`.
#[repr(C)]
pub struct Op {
    ev: daos_event_t,
    io: IoDesc,
    key: ObjectKey,
    sink: Sink,
}

impl Op {
    pub fn new(kind: IoKind, key: &ObjectKey, extents: &[crate::daos::io::Extent], sink: Sink) -> Box<Op> {
        Box::new(Op { ev: daos_event_t::default(), io: IoDesc::new(kind, key.as_bytes(), extents), key: key.clone(), sink })
    }

    /// Turns the DAOS result into the sink's answer.
    fn finish(self: Box<Op>, lib: &Library, rc: i32) {
        let call = match self.io.kind {
            IoKind::Update => "daos_obj_update",
            IoKind::Fetch => "daos_obj_fetch",
            IoKind::Size => "daos_obj_query_key",
        };
        let daos_err = |rc| Error::Daos { call, rc, name: lib.errstr(rc) };
        match self.sink {
            Sink::Xfer(ref attempt) => {
                let result = if rc != 0 {
                    Err(daos_err(rc))
                } else if self.io.kind == IoKind::Fetch {
                    match self.io.fetched() {
                        None => Err(Error::NoSuchKey { key: self.key.display() }),
                        Some(got) if got < self.io.bytes() => {
                            Err(Error::ShortRead { key: self.key.display(), want: self.io.bytes(), got })
                        }
                        Some(_) => Ok(()),
                    }
                } else {
                    Ok(())
                };
                if let Err(e) = &result {
                    tracing::debug!(key = %self.key.display(), "DAOS operation failed: {e}");
                }
                attempt.complete(result);
            }
            Sink::Size { ref batch, index } => {
                let result = match rc {
                    0 => Ok(Some(self.io.size())),
                    rc if rc == -crate::daos::sys::DER_NONEXIST => Ok(None),
                    rc => Err(daos_err(rc)),
                };
                batch.set(index, result);
            }
        }
    }

    fn fail(self: Box<Op>, e: Error) {
        match self.sink {
            Sink::Xfer(ref a) => a.complete(Err(e)),
            Sink::Size { ref batch, index } => batch.set(index, Err(e)),
        }
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
        if self.inflight.fetch_add(1, Ordering::AcqRel) < self.max_inflight {
            self.launch(op);
        } else {
            self.inflight.fetch_sub(1, Ordering::AcqRel);
            self.waiting.lock().unwrap().push_back(op);
        }
        // Wake the lane if it sleeps with nothing in flight. Taking the lock orders this
        // notification after its emptiness check.
        let _g = self.waiting.lock().unwrap();
        self.idle.notify_one();
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
            } else if self.inflight.load(Ordering::Acquire) == 0 {
                let g = self.waiting.lock().unwrap();
                if g.is_empty() && self.inflight.load(Ordering::Acquire) == 0 && !self.stop.load(Ordering::Acquire) {
                    drop(self.idle.wait_timeout(g, Duration::from_millis(100)).unwrap());
                    continue;
                }
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
