// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//! Key lengths for `queryMem`: a fetch of each key's record (`crate::record`, on the key's first
//! dkey), driven from the calling thread: they need no lane, only events outside any queue that
//! the caller tests. Fetches still inside DAOS when the caller gives up are handed back as
//! `Abandoned`, for someone (the lanes) to reap later.

use std::collections::VecDeque;
use std::ptr::addr_of_mut;
use std::time::{Duration, Instant};

use super::io::IoDesc;
use super::{daos_event_t, rc_is_nonexistent, Bound, Library, Object};
use crate::error::Error;
use crate::key::ObjectKey;
use crate::record::Record;

/// Longest single `daos_event_test` wait of a record fetch.
const TEST_SLICE: Duration = Duration::from_millis(1);

/// One record fetch. `#[repr(C)]` with the event first, as for the lanes' operations.
#[repr(C)]
struct SizeQuery {
    ev: daos_event_t,
    io: IoDesc,
}

impl SizeQuery {
    fn daos_error(lib: &Library, rc: i32) -> Error {
        Error::Daos { call: "daos_obj_fetch", rc, name: lib.errstr(rc) }
    }

    /// What a completed record fetch says: the dkey's record, or None when it has none this
    /// version reads (never written, punched, or written by a version without records): such a
    /// key is a miss for reads too. `DER_NONEXIST` is absent as well.
    fn result(&self, lib: &Library, rc: i32) -> Result<Option<Record>, Error> {
        match rc {
            0 => match self.io.record_read() {
                Ok(r) => Ok(Some(r)),
                Err(Error::NoSuchKey { .. }) => Ok(None),
                Err(e) => {
                    tracing::debug!("queryMem: {e}");
                    Ok(None)
                }
            },
            rc if rc_is_nonexistent(rc) => Ok(None),
            rc => Err(SizeQuery::daos_error(lib, rc)),
        }
    }
}

/// A launched record fetch its caller gave up on; DAOS still holds it. Never dropped while
/// DAOS may complete it: `try_reap` frees it once DAOS is done, and one that is never reaped
/// is leaked (late completion must never touch freed memory).
pub struct Abandoned(*mut SizeQuery);

// SAFETY: the query behind the pointer is owned by whoever holds the `Abandoned` (or DAOS) alone.
unsafe impl Send for Abandoned {}

impl Abandoned {
    /// Tests the query without waiting: `Ok(true)` when DAOS completed it, and it was freed
    /// (the `Abandoned` is then spent: drop it, never test it again); `Ok(false)` while DAOS
    /// still holds it.
    pub fn try_reap(&self, lib: &Library) -> Result<bool, Error> {
        let raw = self.0;
        // SAFETY: raw is a launched, unreaped query event owned by this `Abandoned`.
        let done = unsafe { lib.event_test(addr_of_mut!((*raw).ev), 0)? };
        if done {
            // SAFETY: reaped: DAOS is done with it, and the caller drops this handle now.
            let mut q = unsafe { Box::from_raw(raw) };
            // SAFETY: initialised, and no longer running (reaped).
            unsafe { lib.fini_event(&mut q.ev) };
        }
        Ok(done)
    }
}

/// Records of dkeys `keys` (None: absent), fetched from the calling thread: up to `window` fetches in
/// flight at once on events outside any queue, progressed with `daos_event_test` here.
/// queryMem is synchronous for its caller anyway, and driving progress in the caller spares a
/// hand-off to a lane thread and back per key (LMCache calls it from 16 threads at once).
/// Queries still inside DAOS when it gives up (at the deadline, or on an error of DAOS's event
/// calls) go to `abandon`, which must keep them until DAOS completes them.
pub fn query_records(
    lib: &'static Library,
    obj: &Object,
    keys: &[ObjectKey],
    window: usize,
    bound: Bound,
    abandon: impl FnOnce(Vec<Abandoned>),
) -> Result<Vec<Option<Record>>, Error> {
    let mut inflight: VecDeque<(usize, *mut SizeQuery)> = VecDeque::new();
    let result = drive(lib, obj, keys, window, bound, &mut inflight);
    if !inflight.is_empty() {
        abandon(inflight.into_iter().map(|(_, q)| Abandoned(q)).collect());
    }
    result
}

fn drive(
    lib: &'static Library,
    obj: &Object,
    keys: &[ObjectKey],
    window: usize,
    bound: Bound,
    inflight: &mut VecDeque<(usize, *mut SizeQuery)>,
) -> Result<Vec<Option<Record>>, Error> {
    let deadline = bound.deadline;
    let mut records = vec![None; keys.len()];
    let mut first_err: Option<Error> = None;
    let mut next = 0;
    while next < keys.len() || !inflight.is_empty() {
        while next < keys.len() && inflight.len() < window.max(1) {
            let query = SizeQuery { ev: daos_event_t::default(), io: IoDesc::record(keys[next].clone()) };
            let raw = Box::into_raw(Box::new(query));
            // SAFETY: raw is a live boxed query; from launch until reaped it belongs to DAOS.
            let rc = unsafe {
                match lib.init_event_unqueued(addr_of_mut!((*raw).ev)) {
                    Err(e) => {
                        drop(Box::from_raw(raw));
                        return Err(e);
                    }
                    Ok(()) => obj.launch(addr_of_mut!((*raw).io), addr_of_mut!((*raw).ev)),
                }
            };
            if rc == 0 {
                inflight.push_back((next, raw));
            } else {
                // SAFETY: not launched, so not DAOS's.
                let mut q = unsafe { Box::from_raw(raw) };
                // SAFETY: initialised, and no longer running (never launched).
                unsafe { lib.fini_event(&mut q.ev) };
                first_err.get_or_insert(SizeQuery::daos_error(lib, rc));
            }
            next += 1;
        }
        let Some(&(index, raw)) = inflight.front() else { continue };
        // Short slices: another thread progressing the same DAOS context may complete our
        // event behind our back, and CaRT would otherwise sleep out a long slice.
        let left = deadline.saturating_duration_since(Instant::now()).min(TEST_SLICE);
        // The host's exit waits for this guard to go (see host.rs); the queries still in
        // flight are then handed to `abandon`.
        let Some(_drive) = crate::host::drive() else { return Err(Error::ShuttingDown) };
        // SAFETY: raw is launched and not yet reaped.
        let done = unsafe { lib.event_test(addr_of_mut!((*raw).ev), left.as_micros() as i64)? };
        if done {
            inflight.pop_front();
            // SAFETY: reaped: DAOS is done with it.
            let mut q = unsafe { Box::from_raw(raw) };
            let rc = q.ev.ev_error;
            // SAFETY: initialised, and no longer running (reaped).
            unsafe { lib.fini_event(&mut q.ev) };
            match q.result(lib, rc) {
                Ok(rec) => records[index] = rec,
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
        } else if Instant::now() >= deadline {
            let missing = inflight.len() + (keys.len() - next);
            return Err(Error::Timeout { what: format!("{missing} of {} key queries", keys.len()), ms: bound.ms });
        }
    }
    match first_err {
        Some(e) => Err(e),
        None => Ok(records),
    }
}
