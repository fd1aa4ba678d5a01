// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//! Event queues and events, with client-driven progress: a launched operation is a `Task`
//! parked on its EQ, and it runs (validation result delivery, data copy) only inside
//! `daos_eq_poll` / `daos_event_test` of a thread that polls, or in the caller of a blocking
//! (ev == NULL) call.
//!
//! Event private state lives in `ev_private.space` (160 bytes):
//! `[0]` magic, `[1]` `Arc<Eq>` raw pointer, `[2]` state (READY / RUNNING), `[3]` parent.

use std::collections::VecDeque;
use std::os::raw::c_int;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::ffi::*;
use crate::sim::{self, STATS};

const EV_MAGIC: u64 = 0xda05_5e1d_e7e7_0001;

/// The work of one operation; returns 0 or a negative DER code.
pub type Work = Box<dyn FnOnce() -> c_int + Send>;

pub struct Task {
    ev: *mut daos_event_t,
    /// An object I/O RPC: held back by "hang".
    obj_rpc: bool,
    ready_at: Option<Instant>,
    work: Work,
}

// The event pointer is only dereferenced by the thread that completes the task; the caller
// keeps the event alive until it is reaped (the DAOS contract).
// SAFETY: needed for the raw event pointer; see above: one thread at a time dereferences it.
unsafe impl Send for Task {}

impl Task {
    pub fn new(obj_rpc: bool, ready_at: Option<Instant>, work: Work) -> Self {
        Task { ev: std::ptr::null_mut(), obj_rpc, ready_at, work }
    }

    fn runnable(&self, hung: bool, now: &mut Option<Instant>) -> Result<(), Option<Instant>> {
        if self.obj_rpc && hung {
            return Err(None);
        }
        match self.ready_at {
            None => Ok(()),
            Some(r) => {
                let n = *now.get_or_insert_with(Instant::now);
                if r <= n {
                    Ok(())
                } else {
                    Err(Some(r))
                }
            }
        }
    }

    /// Runs a task in the calling thread (blocking API call), honouring hang and the model.
    pub fn run_sync(self) -> c_int {
        if self.obj_rpc {
            loop {
                sim::wait_while_hung();
                if let Some(r) = self.ready_at {
                    let now = Instant::now();
                    if r > now {
                        std::thread::sleep(r - now);
                    }
                }
                if !sim::is_hung() {
                    break;
                }
            }
        }
        (self.work)()
    }
}

#[derive(Default)]
struct EqState {
    pending: VecDeque<Task>,
    /// Launched and not yet reaped (pending or being run by a poller).
    inflight: usize,
    destroyed: bool,
}

#[derive(Default)]
pub struct Eq {
    st: Mutex<EqState>,
    cv: Condvar,
}

static ALL_EQS: Mutex<Vec<Weak<Eq>>> = Mutex::new(Vec::new());

impl Eq {
    pub fn new() -> Arc<Eq> {
        let eq = Arc::new(Eq::default());
        let mut all = ALL_EQS.lock();
        all.retain(|w| w.strong_count() > 0);
        all.push(Arc::downgrade(&eq));
        eq
    }
}

/// The EQ of events initialised with DAOS_HDL_INVAL (reaped by `daos_event_test`).
fn default_eq() -> &'static Arc<Eq> {
    static D: OnceLock<Arc<Eq>> = OnceLock::new();
    D.get_or_init(Eq::new)
}

/// Wakes every poller (after "resume", so hung tasks get picked up).
pub fn wake_all_eqs() {
    let eqs: Vec<Arc<Eq>> = ALL_EQS.lock().iter().filter_map(Weak::upgrade).collect();
    for eq in eqs {
        let _g = eq.st.lock();
        eq.cv.notify_all();
    }
}

// ---------------------------------------------------------------------------------------------
// ev_private accessors

unsafe fn space(ev: *mut daos_event_t) -> *mut u64 {
    // SAFETY: the caller keeps this function's `# Safety` contract, which is all the operations
    // below need.
    unsafe { std::ptr::addr_of_mut!((*ev).ev_private.space) as *mut u64 }
}

unsafe fn magic_ok(ev: *mut daos_event_t) -> bool {
    // SAFETY: the caller keeps this function's `# Safety` contract, which is all the operations
    // below need.
    unsafe { !ev.is_null() && std::ptr::read_volatile(space(ev)) == EV_MAGIC }
}

unsafe fn state<'a>(ev: *mut daos_event_t) -> &'a AtomicU64 {
    // SAFETY: the caller keeps this function's `# Safety` contract, which is all the operations
    // below need.
    unsafe { &*(space(ev).add(2) as *const AtomicU64) }
}

unsafe fn eq_of<'a>(ev: *mut daos_event_t) -> &'a Eq {
    // SAFETY: the caller keeps this function's `# Safety` contract, which is all the operations
    // below need.
    unsafe { &*(*space(ev).add(1) as *const Eq) }
}

unsafe fn complete(ev: *mut daos_event_t, rc: c_int) {
    // SAFETY: the caller keeps this function's `# Safety` contract, which is all the operations
    // below need.
    unsafe {
        (*ev).ev_error = rc;
        state(ev).store(DAOS_EVS_READY as u64, Ordering::Release);
    }
}

// ---------------------------------------------------------------------------------------------
// Launch / progress

/// Launches `task` on event `ev`. Returns what the API call returns: 0, or -DER_INVAL for an
/// event that was never initialised.
///
/// # Safety
/// `ev` must be NULL or point to a live event.
pub unsafe fn launch(ev: *mut daos_event_t, mut task: Task) -> c_int {
    // SAFETY: the caller keeps this function's `# Safety` contract, which is all the operations
    // below need.
    unsafe {
        if !magic_ok(ev) {
            return -DER_INVAL;
        }
        if state(ev)
            .compare_exchange(DAOS_EVS_READY as u64, DAOS_EVS_RUNNING as u64, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            // As in DAOS: the launch fails inside the task, the API still returns 0 and the
            // in-use event's ev_error is clobbered.
            tracing::error!(?ev, "event reused while running or unreaped: -DER_NO_PERM");
            (*ev).ev_error = -DER_NO_PERM;
            return 0;
        }
        (*ev).ev_error = 0;
        task.ev = ev;
        let eq = eq_of(ev);
        let mut st = eq.st.lock();
        if st.destroyed {
            drop(st);
            complete(ev, -DER_NONEXIST);
            return 0;
        }
        st.pending.push_back(task);
        st.inflight += 1;
        STATS.inflight.fetch_add(1, Ordering::Relaxed);
        drop(st);
        eq.cv.notify_all();
        0
    }
}

/// Takes up to `max` runnable tasks. Also returns the earliest `ready_at` among the ones not
/// yet runnable (meaningful when nothing was taken).
fn take_ready(st: &mut EqState, max: usize, only: Option<*mut daos_event_t>) -> (Vec<Task>, Option<Instant>) {
    let hung = sim::is_hung();
    let mut now = None;
    let mut taken = Vec::new();
    let mut earliest: Option<Instant> = None;
    let n = st.pending.len();
    for _ in 0..n {
        if taken.len() >= max {
            break;
        }
        let t = st.pending.pop_front().unwrap();
        if only.is_some_and(|e| e != t.ev) {
            st.pending.push_back(t);
            continue;
        }
        match t.runnable(hung, &mut now) {
            Ok(()) => taken.push(t),
            Err(r) => {
                if let Some(r) = r {
                    earliest = Some(earliest.map_or(r, |e| e.min(r)));
                }
                st.pending.push_back(t);
            }
        }
    }
    (taken, earliest)
}

/// Runs taken tasks (outside the EQ lock) and reaps them.
fn run_and_reap(eq: &Eq, taken: Vec<Task>, out: Option<&mut [*mut daos_event_t]>) -> usize {
    let k = taken.len();
    let mut evs = Vec::with_capacity(k);
    for t in taken {
        let ev = t.ev;
        let rc = (t.work)();
        tracing::trace!(?ev, rc, "event completed");
        // SAFETY: the event is alive until reaped (DAOS contract) and this task completes it once.
        unsafe { complete(ev, rc) };
        evs.push(ev);
    }
    if let Some(out) = out {
        out[..k].copy_from_slice(&evs);
    }
    {
        let mut st = eq.st.lock();
        st.inflight -= k;
    }
    STATS.inflight.fetch_sub(k as i64, Ordering::Relaxed);
    eq.cv.notify_all();
    k
}

fn deadline_of(timeout_us: i64) -> Option<Instant> {
    (timeout_us > 0).then(|| Instant::now() + Duration::from_micros(timeout_us as u64))
}

fn wait_until(
    eq: &Eq,
    st: &mut parking_lot::MutexGuard<'_, EqState>,
    deadline: Option<Instant>,
    earliest: Option<Instant>,
) {
    let t = match (deadline, earliest) {
        (Some(d), Some(e)) => Some(d.min(e)),
        (d, e) => d.or(e),
    };
    match t {
        Some(t) => {
            eq.cv.wait_until(st, t);
        }
        None => eq.cv.wait(st),
    }
}

pub fn eq_poll(eq: &Eq, wait_running: bool, timeout: i64, events: &mut [*mut daos_event_t]) -> c_int {
    let deadline = deadline_of(timeout);
    let mut st = eq.st.lock();
    loop {
        if wait_running && st.inflight == 0 {
            return 0;
        }
        let (taken, earliest) = take_ready(&mut st, events.len(), None);
        if !taken.is_empty() {
            drop(st);
            return run_and_reap(eq, taken, Some(events)) as c_int;
        }
        if timeout == 0 {
            return 0;
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return 0;
        }
        wait_until(eq, &mut st, deadline, earliest);
    }
}

/// `daos_event_test`: Ok(true) once the event is reaped (or was never launched).
///
/// # Safety
/// `ev` must point to a live, initialised event.
pub unsafe fn event_test(ev: *mut daos_event_t, timeout: i64) -> bool {
    // SAFETY: the caller keeps this function's `# Safety` contract, which is all the operations
    // below need.
    unsafe {
        let eq = eq_of(ev);
        let deadline = deadline_of(timeout);
        let mut st = eq.st.lock();
        loop {
            if state(ev).load(Ordering::Acquire) != DAOS_EVS_RUNNING as u64 {
                return true;
            }
            let (taken, earliest) = take_ready(&mut st, 1, Some(ev));
            if !taken.is_empty() {
                drop(st);
                run_and_reap(eq, taken, None);
                return true;
            }
            if timeout == 0 {
                return false;
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return false;
            }
            wait_until(eq, &mut st, deadline, earliest);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Event and EQ lifecycle

/// # Safety
/// `ev` must point to writable memory of a `daos_event_t`.
pub unsafe fn event_init(ev: *mut daos_event_t, eq: Option<Arc<Eq>>) {
    // SAFETY: the caller keeps this function's `# Safety` contract, which is all the operations
    // below need.
    unsafe {
        std::ptr::write_bytes(ev, 0, 1);
        let eq = eq.unwrap_or_else(|| default_eq().clone());
        let sp = space(ev);
        *sp.add(1) = Arc::into_raw(eq) as u64;
        state(ev).store(DAOS_EVS_READY as u64, Ordering::Release);
        std::ptr::write_volatile(sp, EV_MAGIC);
    }
}

/// # Safety
/// `ev` must be NULL or point to a live event.
pub unsafe fn event_fini(ev: *mut daos_event_t) -> c_int {
    // SAFETY: the caller keeps this function's `# Safety` contract, which is all the operations
    // below need.
    unsafe {
        if !magic_ok(ev) {
            return -DER_INVAL;
        }
        if state(ev).load(Ordering::Acquire) == DAOS_EVS_RUNNING as u64 {
            return -DER_BUSY;
        }
        let sp = space(ev);
        std::ptr::write_volatile(sp, 0);
        let eq = *sp.add(1) as *const Eq;
        *sp.add(1) = 0;
        if !eq.is_null() {
            drop(Arc::from_raw(eq));
        }
        0
    }
}

/// # Safety
/// `ev` must be NULL or point to a live event.
pub unsafe fn event_is_valid(ev: *mut daos_event_t) -> bool {
    // SAFETY: the caller keeps this function's `# Safety` contract, which is all the operations
    // below need.
    unsafe { magic_ok(ev) }
}

/// # Safety
/// `ev` must point to a live, initialised event.
pub unsafe fn event_running(ev: *mut daos_event_t) -> bool {
    // SAFETY: the caller keeps this function's `# Safety` contract, which is all the operations
    // below need.
    unsafe { state(ev).load(Ordering::Acquire) == DAOS_EVS_RUNNING as u64 }
}

/// `daos_eq_destroy` on a looked-up EQ: -DER_BUSY while events are in flight, unless `force`,
/// which cancels the pending ones (their events complete with -DER_CANCELED).
pub fn eq_destroy(eq: &Eq, force: bool) -> c_int {
    let mut st = eq.st.lock();
    if st.inflight > 0 && !force {
        return -DER_BUSY;
    }
    st.destroyed = true;
    let dropped: Vec<Task> = st.pending.drain(..).collect();
    st.inflight -= dropped.len();
    drop(st);
    STATS.inflight.fetch_sub(dropped.len() as i64, Ordering::Relaxed);
    for t in dropped {
        // SAFETY: each dropped task's event is alive until reaped, and is completed only here.
        unsafe { complete(t.ev, -DER_CANCELED) };
    }
    eq.cv.notify_all();
    0
}
