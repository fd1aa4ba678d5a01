// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//! One posting of a transfer request: how many of its folds are still to complete, its first
//! error, its deadline, and the one status `checkXfer` reports for it.
//!
//! DAOS never touches a caller's memory (`crate::stage`): the only accesses to it are the copy
//! of a write's bytes into its staging buffer before the RPC is sent (`begin_launch`) and the
//! copy of a verified read out of it (`complete_read`). Each starts only while the request is
//! live (not yet given a terminal status, not released, not reposted), decided under this
//! attempt's lock, and runs outside it, so the folds of one request copy in parallel on
//! several threads and `checkXfer` never waits behind a copy. Whatever ends the request
//! (its terminal status, release, repost) first stops new copies, then waits for the ones
//! running to finish (`State::copying`: bounded by one fold's memcpy, never by DAOS). So once
//! `checkXfer` has reported anything but in-progress, or release has returned, nothing of the
//! request touches the caller's buffers again, whatever DAOS still holds: a fold DAOS answers
//! later lands in a buffer of the plugin's and is dropped. A request therefore ends at its
//! deadline, never later, and release never waits for DAOS.
//!
//! A read succeeds only when every fold of each key it touched read the same write (the id in
//! the value's record, `crate::record`): a key rewritten between two of its folds is a miss.
//!
//! An early failure of one fold waits for its siblings (until the deadline), and folds not yet
//! handed to DAOS are dropped once the attempt has failed, been cancelled (released or
//! reposted) or passed its deadline. Once its timeout is reported, the folds DAOS still holds
//! give their in-flight slots back (`Budget`): a dead engine must not keep the engine's budget
//! full.
//!
//! Everything that decides an outcome (launch or drop a fold, count it back, report the
//! terminal status) happens under one lock, so a fold can never be launched after the attempt
//! was given up, and concurrent `checkXfer` callers all see the one status decided first.
//! The lock is taken twice per fold launch and completion (around its copy), and once per
//! `checkXfer`.

use std::collections::HashMap;

use parking_lot::{Condvar, Mutex, MutexGuard};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::{Error, Status};
use crate::key::ObjectKey;
use crate::stage::StagePool;
use crate::totals;

/// The engine-wide count of in-flight slots taken by transfer RPCs (`max_inflight`): taken at
/// launch, given back when DAOS completes the RPC, or earlier, once the RPC's request has been
/// reported timed out (`Attempt::status`).
#[derive(Debug)]
pub struct Budget {
    pub max: usize,
    taken: AtomicUsize,
}

impl Budget {
    pub fn new(max: usize) -> Budget {
        Budget { max: max.max(1), taken: AtomicUsize::new(0) }
    }

    /// Takes a slot if one is free.
    pub fn take(&self) -> bool {
        if self.taken.fetch_add(1, Ordering::SeqCst) < self.max {
            true
        } else {
            self.taken.fetch_sub(1, Ordering::SeqCst);
            false
        }
    }

    pub fn give(&self, n: usize) {
        self.taken.fetch_sub(n, Ordering::SeqCst);
    }
}

#[derive(Default)]
struct State {
    /// Folds not yet completed: still queued in a lane, or inside DAOS.
    remaining: usize,
    /// Folds handed to DAOS and not yet reaped.
    in_daos: usize,
    /// Staging bytes (by allocation) the folds in DAOS hold.
    in_daos_bytes: usize,
    /// One fold failed; queued siblings are dropped.
    failed: bool,
    /// Released, reposted or ended: nobody reads the outcome, queued folds are dropped, and
    /// nothing more is copied from or into the caller's buffers. Set by `give_up` alone, which
    /// gave back the in-flight slots and staging charge of the folds then in DAOS: every fold
    /// in DAOS from then on is one of those (none is launched after).
    cancelled: bool,
    /// The first error, until the terminal status is reported.
    error: Option<Error>,
    /// The terminal status, once decided; every later `status()` returns it.
    reported: Option<Status>,
    /// How the process totals count it, set with `reported` by the one caller that decided it
    /// (it alone saw the error), taken once (`take_outcome`).
    outcome: Option<totals::Outcome>,
    /// The write each key's folds read so far (reads).
    writes: HashMap<ObjectKey, u64>,
    /// Copies from or into the caller's buffers running now, outside the lock (`copy_done`).
    copying: usize,
    /// A write refused for space waits for eviction's room until then, past its deadline (see
    /// `wait_for_space`).
    space_until: Option<Instant>,
}

pub struct Attempt {
    total: usize,
    deadline: Instant,
    timeout_ms: u64,
    budget: Option<Arc<Budget>>,
    /// Where the folds' staging buffers come from (None in tests of the lifecycle).
    stage: Option<Arc<StagePool>>,
    state: Mutex<State>,
    /// Signalled when the last running copy ends: what ends the request waits for it.
    copy_done: Condvar,
}

impl Attempt {
    /// `budget`: where the folds' in-flight slots come from (None in tests of the lifecycle).
    pub fn new(ops: usize, timeout: Duration, budget: Option<Arc<Budget>>) -> Attempt {
        Attempt {
            total: ops,
            deadline: Instant::now() + timeout,
            timeout_ms: timeout.as_millis() as u64,
            budget,
            stage: None,
            state: Mutex::new(State { remaining: ops, ..State::default() }),
            copy_done: Condvar::new(),
        }
    }

    /// The staging pool whose buffers the folds hold: what DAOS still holds when the request
    /// ends stops counting against its cap (`StagePool::owe`), as the in-flight slots do.
    pub fn owing_to(mut self, stage: Arc<StagePool>) -> Attempt {
        self.stage = Some(stage);
        self
    }

    /// How the terminal status counts in the process totals (`crate::totals`), the first time
    /// it is asked once that status was decided, None after: a request is counted once, as its
    /// decider saw it, however many threads check it and in whatever order.
    pub fn take_outcome(&self) -> Option<totals::Outcome> {
        self.lock().outcome.take()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock()
    }

    /// Past the deadline, or past the wait for space a refused write was given.
    fn past(&self, s: &State) -> bool {
        let now = Instant::now();
        now >= self.deadline && s.space_until.is_none_or(|u| now >= u)
    }

    /// A fold of this write was refused for space and goes back to wait for eviction's room:
    /// DAOS gives punched space back only when it aggregates (27-31 s after the punch on DAOS
    /// 2.8 here), so the request may go on until `until`, past its deadline. It is not inside
    /// DAOS meanwhile, so an engine failure does not stretch this.
    pub fn wait_for_space(&self, until: Instant) {
        let mut s = self.lock();
        if self.past(&s) {
            // Refused only after its deadline: the request ends (a sibling fold already
            // dropped as past its deadline must not be counted as done by a later wait).
            return;
        }
        s.space_until = Some(s.space_until.map_or(until, |u| u.max(until)));
    }

    /// Folds DAOS holds now.
    pub fn in_daos(&self) -> usize {
        self.lock().in_daos
    }

    fn may_launch(&self, s: &State) -> bool {
        !s.failed && !s.cancelled && s.reported.is_none() && !self.past(s)
    }

    /// True while the request is live and a fold is in DAOS or may still be launched: a
    /// repost now would be a second posting of a request the caller still waits for.
    #[cfg(test)]
    pub fn busy(&self) -> bool {
        let s = self.lock();
        s.reported.is_none() && !s.cancelled && (s.in_daos > 0 || (s.remaining > 0 && self.may_launch(&s)))
    }

    /// For a repost: ends this attempt unless it is still live with folds in DAOS or to be
    /// launched. Once it returns true no fold of this attempt is launched or copied any more;
    /// its folds DAOS still holds complete into the plugin's buffers alone.
    pub fn retire(&self) -> bool {
        let mut s = self.lock();
        if s.reported.is_none() && !s.cancelled && (s.in_daos > 0 || (s.remaining > 0 && self.may_launch(&s))) {
            return false;
        }
        self.give_up(&mut s);
        true
    }

    /// Called by a lane right before handing a fold to DAOS (it holds a slot of the budget).
    /// False: drop the fold instead (and report it with `skip`, or fail it if `stage_in` said
    /// false); true: `stage_in` ran (a write's copy of the caller's bytes, started while the
    /// request was live and finished before anything could end it) and the request is still
    /// live, and the fold counts as inside DAOS (with `charge` bytes of staging) until
    /// `leave_daos`. A request that ended
    /// during the copy launches nothing: its copy went into the plugin's buffer only.
    pub fn begin_launch(&self, charge: usize, stage_in: impl FnOnce() -> bool) -> bool {
        let Some(copy) = self.start_copy(|s| self.may_launch(s)) else { return false };
        let staged = catch_unwind(AssertUnwindSafe(stage_in));
        let mut s = copy.end();
        let staged = staged.unwrap_or_else(|_| {
            // A bug in the copy: the request fails, and the fold goes back as one not launched.
            Self::fail(&mut s, Error::CopyPanicked);
            false
        });
        if !staged || !self.may_launch(&s) {
            return false;
        }
        s.in_daos += 1;
        s.in_daos_bytes += charge;
        true
    }

    /// A copy from or into the caller's buffers may start when `live` says so (under the
    /// lock): the request then stays live (nothing that ends it returns) until the copy's
    /// guard ends or is dropped.
    fn start_copy(&self, live: impl FnOnce(&State) -> bool) -> Option<Copying<'_>> {
        let mut s = self.lock();
        if !live(&s) {
            return None;
        }
        s.copying += 1;
        Some(Copying { attempt: self })
    }

    /// Waits until no copy from or into the caller's buffers runs (`State::copying`); the lock
    /// is let go meanwhile.
    fn wait_for_copies(&self, s: &mut MutexGuard<'_, State>) {
        while s.copying > 0 {
            self.copy_done.wait(s);
        }
    }

    /// A launched fold is out of DAOS (completed, or refused at launch); `charge`: as given to
    /// `begin_launch`. Returns whether its in-flight slot was given back already (the caller
    /// must not give it back again), and with it its staging buffer's charge moved to the
    /// pool's owed allowance (the buffer goes back there: `Stage::mark_owed`).
    pub fn leave_daos(&self, charge: usize) -> bool {
        let mut s = self.lock();
        s.in_daos -= 1;
        s.in_daos_bytes -= charge;
        s.cancelled
    }

    /// Records the outcome of one fold of a write, or one that moved nothing (after
    /// `leave_daos`, for a launched one).
    pub fn complete(&self, result: Result<(), Error>) {
        let mut s = self.lock();
        if let Err(e) = result {
            Self::fail(&mut s, e);
        }
        s.remaining -= 1;
    }

    fn fail(s: &mut State, e: Error) {
        if !s.failed {
            s.failed = true;
            s.error = Some(e);
        }
    }

    /// Records the outcome of one fold of a read of `key`. Unless the request has ended or
    /// failed, `verify_deliver` runs (outside the lock, the request kept live meanwhile, see
    /// `start_copy`): given the write another fold of `key` read so far (if any), it checks
    /// what this fold read and copies it into the caller's buffers, and returns the write it
    /// read, or the miss. Folds of one key delivered at the same time are compared after: any
    /// two that read different writes fail the request.
    pub fn complete_read(&self, key: ObjectKey, verify_deliver: impl FnOnce(Option<u64>) -> Result<u64, Error>) {
        let mut expect = None;
        let copy = self.start_copy(|s| {
            expect = s.writes.get(&key).copied();
            !(s.cancelled || s.reported.is_some() || s.failed)
        });
        let Some(copy) = copy else {
            self.lock().remaining -= 1;
            return;
        };
        let read = catch_unwind(AssertUnwindSafe(|| verify_deliver(expect))).unwrap_or(Err(Error::CopyPanicked));
        let mut s = copy.end();
        match read {
            Ok(id) => match s.writes.get(&key) {
                Some(&other) if other != id => Self::fail(
                    &mut s,
                    Error::Unverified {
                        key: key.display(),
                        why: "it was rewritten while it was read (its chunks hold different writes)",
                    },
                ),
                _ => {
                    s.writes.insert(key, id);
                }
            },
            Err(e) => Self::fail(&mut s, e),
        }
        s.remaining -= 1;
    }

    /// Records a fold of a read that failed before anything could be checked (DAOS's error).
    pub fn fail_read(&self, e: Error) {
        let mut s = self.lock();
        Self::fail(&mut s, e);
        s.remaining -= 1;
    }

    /// Whether a fold may still be sent (same rule as `begin_launch`, without launching).
    pub fn wants_more(&self) -> bool {
        let s = self.lock();
        self.may_launch(&s)
    }

    /// Completes a fold that was dropped before reaching DAOS (see `begin_launch`).
    pub fn skip(&self) {
        let result = {
            let s = self.lock();
            if self.past(&s) && !s.failed {
                Err(self.timeout(1, 0))
            } else {
                Ok(()) // failed already (its error is kept) or cancelled (nobody asks)
            }
        };
        self.complete(result);
    }

    /// `n` folds did not complete in time, `in_daos` of them inside DAOS: the others waited for
    /// an in-flight slot, staging room or pool space (or were being copied), which says the
    /// engine is loaded or the pool full, not that DAOS is slow.
    fn timeout(&self, n: usize, in_daos: usize) -> Error {
        let unsent = n.saturating_sub(in_daos);
        let what = if unsent == 0 {
            format!("{n} of {} DAOS RPC(s) of this request", self.total)
        } else {
            format!(
                "{n} of {} DAOS RPC(s) of this request ({unsent} of them not in DAOS at the deadline: waiting for \
                 an in-flight slot (max_inflight), staging room (stage_bytes) or pool space, or being copied)",
                self.total
            )
        };
        Error::Timeout { what, ms: self.timeout_ms }
    }

    /// `checkXfer`: never waits on DAOS. Decides the terminal outcome once, under the lock, and
    /// returns it (as an error to log, for a failure); every later call gets the same status.
    pub fn status(&self) -> Result<Status, Error> {
        let mut s = self.lock();
        if let Some(reported) = s.reported {
            // Decided by another caller that may still wait for a copy: this one waits too,
            // so that no caller hears the end before the caller's buffers are let go.
            self.wait_for_copies(&mut s);
            return Ok(reported);
        }
        let outcome = if s.remaining == 0 {
            // Nothing copies any more (a copy's fold counts as remaining until it ended).
            // `error` is taken only here and below, where `reported` is set in the same
            // critical section: a failed attempt still holds its error.
            match s.error.take() {
                Some(e) => Err(e),
                None => Ok(Status::Success),
            }
        } else if self.past(&s) {
            Err(s.error.take().unwrap_or_else(|| self.timeout(s.remaining, s.in_daos)))
        } else {
            return Ok(Status::InProgress);
        };
        // Decided before anything waits: a second caller sees this status, never another.
        s.reported = Some(match &outcome {
            Ok(st) => *st,
            Err(e) => e.status(),
        });
        s.outcome = Some(match &outcome {
            Ok(_) => totals::Outcome::Ok,
            Err(Error::NoSuchKey { .. }) => totals::Outcome::Missing,
            Err(_) => totals::Outcome::Failed,
        });
        if s.remaining > 0 {
            self.give_up(&mut s);
        }
        outcome
    }

    /// The request ends with folds still in DAOS or queued: none is launched or copied any
    /// more, those DAOS holds stop counting against the engine's budget, and this returns once
    /// the copies running now have finished. A request given up before its status was decided
    /// (released, or retired for a repost) can no longer succeed: a fold it stops delivering
    /// must not leave a success behind it.
    fn give_up(&self, s: &mut MutexGuard<'_, State>) {
        if s.reported.is_none() && s.remaining > 0 {
            s.reported = Some(Status::Backend);
        }
        if !s.cancelled {
            s.cancelled = true;
            if let (Some(b), n @ 1..) = (&self.budget, s.in_daos) {
                b.give(n);
            }
            if let (Some(p), n @ 1..) = (&self.stage, s.in_daos_bytes) {
                p.owe(n);
            }
        }
        self.wait_for_copies(s);
    }

    /// For a release: ends the attempt at once. Whatever DAOS still holds completes into the
    /// plugin's buffers, so the caller may free its own as soon as this returns.
    pub fn cancel(&self) {
        let mut s = self.lock();
        self.give_up(&mut s);
    }
}

/// A copy from or into the caller's buffers in progress (`Attempt::start_copy`). Ending it
/// lets what waits to end the request go on. A copy that panics is caught and fails its
/// request (what it left in the buffers is unknown); should a panic get past that, dropping
/// the guard still fails the request and lets the waiters go.
struct Copying<'a> {
    attempt: &'a Attempt,
}

impl<'a> Copying<'a> {
    /// The copy is over: returns the attempt's state, locked.
    fn end(self) -> MutexGuard<'a, State> {
        let a = self.attempt;
        std::mem::forget(self);
        Self::count_out(a)
    }

    /// Takes the copy off the count, waking what waits for the last one.
    fn count_out(a: &'a Attempt) -> MutexGuard<'a, State> {
        let mut s = a.lock();
        s.copying -= 1;
        if s.copying == 0 {
            a.copy_done.notify_all();
        }
        s
    }
}

impl Drop for Copying<'_> {
    fn drop(&mut self) {
        Attempt::fail(&mut Self::count_out(self.attempt), Error::CopyPanicked);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn missing() -> Error {
        Error::NoSuchKey { key: "k".into() }
    }

    fn key(s: &str) -> ObjectKey {
        ObjectKey::from_registration(s.as_bytes(), 0)
    }

    #[test]
    fn success_once_all_complete() {
        let a = Attempt::new(2, Duration::from_secs(10), None);
        assert_eq!(a.status().unwrap(), Status::InProgress);
        a.complete(Ok(()));
        assert_eq!(a.status().unwrap(), Status::InProgress);
        a.complete(Ok(()));
        assert_eq!(a.status().unwrap(), Status::Success);
        assert_eq!(a.status().unwrap(), Status::Success);
    }

    #[test]
    fn an_early_failure_waits_for_its_siblings() {
        let a = Attempt::new(3, Duration::from_secs(10), None);
        assert!(a.begin_launch(0, || true) && a.begin_launch(0, || true));
        a.leave_daos(0);
        a.complete(Err(missing()));
        assert!(
            !a.begin_launch(0, || -> bool { panic!("not staged") }),
            "queued siblings of a failed request are dropped"
        );
        a.skip();
        assert_eq!(a.status().unwrap(), Status::InProgress, "a sibling is still in DAOS");
        assert!(a.busy());
        a.leave_daos(0);
        a.complete(Ok(()));
        assert!(!a.busy());
        assert!(matches!(a.status(), Err(Error::NoSuchKey { .. })));
        assert_eq!(a.status().unwrap(), Status::Backend, "the same status, reported once as an error");
    }

    #[test]
    fn the_totals_count_a_request_once_as_its_decider_saw_it() {
        // Two checkers: the first decides (and alone sees the miss), the second hears the same
        // NIXL status without the error. Whichever of them takes the outcome first, it is the
        // decider's: a miss, counted once.
        let a = Attempt::new(1, Duration::from_secs(10), None);
        assert_eq!(a.take_outcome(), None, "nothing decided yet");
        assert!(a.begin_launch(0, || true));
        a.leave_daos(0);
        a.complete(Err(missing()));
        assert!(matches!(a.status(), Err(Error::NoSuchKey { .. })));
        assert_eq!(a.status().unwrap(), Status::Backend);
        assert_eq!(a.take_outcome(), Some(totals::Outcome::Missing));
        assert_eq!(a.take_outcome(), None, "counted once");
        let ok = Attempt::new(1, Duration::from_secs(10), None);
        assert!(ok.begin_launch(0, || true));
        ok.leave_daos(0);
        ok.complete(Ok(()));
        assert_eq!(ok.status().unwrap(), Status::Success);
        assert_eq!(ok.take_outcome(), Some(totals::Outcome::Ok));
        let late = Attempt::new(2, Duration::from_millis(1), None);
        std::thread::sleep(Duration::from_millis(5));
        assert!(matches!(late.status(), Err(Error::Timeout { .. })));
        assert_eq!(late.take_outcome(), Some(totals::Outcome::Failed));
    }

    #[test]
    fn the_deadline_ends_the_request_whatever_daos_holds() {
        let a = Attempt::new(3, Duration::from_millis(20), None);
        a.complete(Ok(()));
        assert!(a.begin_launch(0, || true));
        std::thread::sleep(Duration::from_millis(30));
        match a.status() {
            Err(Error::Timeout { what, ms }) => {
                assert_eq!(ms, 20);
                assert!(what.starts_with("2 of 3"), "{what}");
            }
            other => panic!("{other:?}"),
        }
        assert!(!a.begin_launch(0, || -> bool { panic!("not staged") }));
        assert!(!a.busy() && a.retire(), "ended: a repost may go, DAOS answers into its own buffers");
        // The late answer is not delivered.
        a.leave_daos(0);
        a.complete_read(key("k"), |_| panic!("delivered after the request ended"));
        a.skip();
        assert_eq!(a.status().unwrap(), Status::Backend);
    }

    #[test]
    fn cancel_stops_copies_at_once() {
        let a = Attempt::new(2, Duration::from_secs(10), None);
        assert!(a.begin_launch(0, || true));
        a.cancel();
        assert!(!a.begin_launch(0, || -> bool { panic!("not staged") }), "a released attempt launches nothing more");
        a.leave_daos(0);
        a.complete_read(key("k"), |_| panic!("delivered after release"));
    }

    #[test]
    fn a_read_agrees_on_one_write_per_key() {
        let a = Attempt::new(3, Duration::from_secs(10), None);
        let mut seen = Vec::new();
        a.complete_read(key("k"), |expect| {
            seen.push(expect);
            Ok(7)
        });
        a.complete_read(key("other"), |expect| {
            seen.push(expect);
            Ok(8)
        });
        a.complete_read(key("k"), |expect| {
            seen.push(expect);
            match expect {
                Some(id) if id != 9 => {
                    Err(Error::Unverified { key: "k".into(), why: "it was rewritten while it was read" })
                }
                _ => Ok(9),
            }
        });
        assert_eq!(seen, vec![None, None, Some(7)], "each fold is told the write its key's other folds read");
        match a.status() {
            Err(Error::Unverified { key, why }) => assert!(key == "k" && why.contains("rewritten"), "{why}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_write_refused_for_space_may_wait_past_its_deadline_until_its_space_wait_ends() {
        let a = Attempt::new(1, Duration::from_millis(20), None);
        assert!(a.begin_launch(0, || true));
        a.leave_daos(0); // refused for space: back in the lanes' retry list
        a.wait_for_space(Instant::now() + Duration::from_millis(150));
        std::thread::sleep(Duration::from_millis(40));
        assert_eq!(a.status().unwrap(), Status::InProgress, "past its deadline, inside its wait for space");
        assert!(a.wants_more() && a.begin_launch(0, || true), "the refused write may be sent again");
        a.leave_daos(0);
        std::thread::sleep(Duration::from_millis(130));
        assert!(!a.wants_more());
        assert!(matches!(a.status(), Err(Error::Timeout { .. })), "the wait for space is bounded too");
    }

    /// A fold dropped at its deadline is a timeout even when a sibling is refused for space
    /// afterwards: a refusal past the deadline grants no wait.
    #[test]
    fn a_refusal_for_space_after_the_deadline_grants_no_wait() {
        let a = Attempt::new(2, Duration::from_millis(10), None);
        assert!(a.begin_launch(0, || true));
        std::thread::sleep(Duration::from_millis(20));
        assert!(!a.wants_more(), "the queued sibling is dropped");
        a.leave_daos(0); // the launched one comes back refused for space
        a.wait_for_space(Instant::now() + Duration::from_secs(5));
        a.skip();
        assert!(!a.wants_more(), "no wait granted past the deadline");
        assert!(matches!(a.status(), Err(Error::Timeout { .. })));
    }

    #[test]
    fn skipped_after_the_deadline_is_a_timeout() {
        let a = Attempt::new(1, Duration::from_millis(5), None);
        std::thread::sleep(Duration::from_millis(10));
        a.skip();
        assert!(matches!(a.status(), Err(Error::Timeout { .. })));
    }
}

#[cfg(test)]
mod race_tests {
    use super::*;
    use std::panic::AssertUnwindSafe;
    use std::sync::atomic::AtomicBool;
    use std::sync::{Arc, Barrier};

    /// A copy that starts while the request is live runs outside the lock; what ends the
    /// request (here its deadline, seen by checkXfer) returns only once the copy is over, and
    /// the fold it staged is not launched.
    #[test]
    fn the_end_of_a_request_waits_for_a_copy_running() {
        let a = Arc::new(Attempt::new(1, Duration::from_millis(30), None));
        let (started, copied) = (Arc::new(Barrier::new(2)), Arc::new(AtomicBool::new(false)));
        let t = {
            let (a, started, copied) = (a.clone(), started.clone(), copied.clone());
            std::thread::spawn(move || {
                a.begin_launch(0, || {
                    started.wait();
                    std::thread::sleep(Duration::from_millis(150));
                    copied.store(true, Ordering::SeqCst);
                    true
                })
            })
        };
        started.wait();
        std::thread::sleep(Duration::from_millis(40));
        assert!(matches!(a.status(), Err(Error::Timeout { .. })));
        assert!(copied.load(Ordering::SeqCst), "the timeout was reported while a copy from the caller's buffer ran");
        assert!(!t.join().unwrap(), "a fold staged across the end of its request is not launched");
    }

    /// Release (cancel) waits for a read's delivery running, and delivers nothing after.
    #[test]
    fn release_waits_for_a_delivery_running() {
        let a = Arc::new(Attempt::new(2, Duration::from_secs(10), None));
        let (started, delivered) = (Arc::new(Barrier::new(2)), Arc::new(AtomicBool::new(false)));
        let t = {
            let (a, started, delivered) = (a.clone(), started.clone(), delivered.clone());
            std::thread::spawn(move || {
                a.complete_read(ObjectKey::from_registration(b"k", 0), |_| {
                    started.wait();
                    std::thread::sleep(Duration::from_millis(100));
                    delivered.store(true, Ordering::SeqCst);
                    Ok(1)
                })
            })
        };
        started.wait();
        a.cancel();
        assert!(delivered.load(Ordering::SeqCst), "release returned while a delivery into the caller's buffer ran");
        a.complete_read(ObjectKey::from_registration(b"k", 0), |_| panic!("delivered after release"));
        t.join().unwrap();
    }

    /// Two callers check at the deadline while one fold's delivery runs and the other fold
    /// completes meanwhile (it is no longer delivered): neither hears success, and neither
    /// hears anything before the running copy is over.
    #[test]
    fn checkers_at_the_deadline_agree_and_none_hears_success_for_an_undelivered_fold() {
        let a = Arc::new(Attempt::new(2, Duration::from_millis(30), None));
        let (started, delivered) = (Arc::new(Barrier::new(2)), Arc::new(AtomicBool::new(false)));
        let copying = {
            let (a, started, delivered) = (a.clone(), started.clone(), delivered.clone());
            std::thread::spawn(move || {
                a.complete_read(ObjectKey::from_registration(b"a", 0), |_| {
                    started.wait();
                    std::thread::sleep(Duration::from_millis(200));
                    delivered.store(true, Ordering::SeqCst);
                    Ok(1)
                })
            })
        };
        started.wait();
        std::thread::sleep(Duration::from_millis(40)); // past the deadline
        let check = |a: Arc<Attempt>, delivered: Arc<AtomicBool>| {
            std::thread::spawn(move || {
                let st = match a.status() {
                    Ok(s) => s,
                    Err(e) => e.status(),
                };
                (st, delivered.load(Ordering::SeqCst))
            })
        };
        let first = check(a.clone(), delivered.clone());
        std::thread::sleep(Duration::from_millis(30));
        // Decided before the first checker waits: whoever checks next, or finds the last fold
        // done when it does, gets this status and no other.
        assert_eq!(a.lock().reported, Some(Status::Backend), "undecided while a checker waits for a copy");
        // The other fold completes while the first checker waits for the copy.
        a.complete_read(ObjectKey::from_registration(b"b", 0), |_| panic!("delivered after the request ended"));
        let second = check(a.clone(), delivered.clone());
        for (st, copy_over) in [first.join().unwrap(), second.join().unwrap()] {
            assert_eq!(st, Status::Backend, "a checker heard {st:?}");
            assert!(copy_over, "a checker heard the end while a copy into the caller's buffer ran");
        }
        copying.join().unwrap();
        assert_eq!(a.status().unwrap(), Status::Backend);
    }

    /// A copy that panics (a bug) fails its request and leaves nothing waiting for it.
    #[test]
    fn a_panicking_copy_fails_the_request_and_hangs_nothing() {
        let a = Attempt::new(1, Duration::from_millis(20), None);
        assert!(!a.begin_launch(0, || panic!("a bug in a copy")), "caught, and not launched");
        a.skip(); // what the lane does with a fold not launched
        assert!(matches!(a.status(), Err(Error::CopyPanicked)), "the request fails at once, with the copy's error");
        let b = Attempt::new(1, Duration::from_secs(10), None);
        b.complete_read(ObjectKey::from_registration(b"k", 0), |_| panic!("a bug in a delivery"));
        assert!(matches!(b.status(), Err(Error::CopyPanicked)));
        let a = Attempt::new(1, Duration::from_millis(20), None);
        // Past the catch (a panic unwinding through the guard itself): the request still fails
        // and its end waits for nothing.
        let r = catch_unwind(AssertUnwindSafe(|| {
            let _copy = a.start_copy(|_| true);
            panic!("unwinding past the copy");
        }));
        assert!(r.is_err());
        std::thread::sleep(Duration::from_millis(30));
        assert!(matches!(a.status(), Err(Error::CopyPanicked)), "the deadline's status came, with the copy's error");
        a.cancel();
    }

    /// A request released (or retired for a repost) before its status was decided never
    /// reports success afterwards, although its last fold was not delivered.
    #[test]
    fn a_request_given_up_undecided_never_succeeds_after() {
        let a = Attempt::new(2, Duration::from_secs(10), None);
        a.complete_read(ObjectKey::from_registration(b"a", 0), |_| Ok(1));
        a.cancel();
        a.complete_read(ObjectKey::from_registration(b"b", 0), |_| panic!("delivered after release"));
        assert_eq!(a.status().unwrap(), Status::Backend);
    }

    /// Two folds of one key delivered at the same time, each told no other fold's write yet:
    /// if they read different writes the request fails, whichever finished first.
    #[test]
    fn folds_of_one_key_delivered_together_still_agree_on_one_write() {
        for ids in [(5, 6), (5, 5)] {
            let a = Arc::new(Attempt::new(2, Duration::from_secs(10), None));
            let gate = Arc::new(Barrier::new(2));
            let ts: Vec<_> = [ids.0, ids.1]
                .into_iter()
                .map(|id| {
                    let (a, gate) = (a.clone(), gate.clone());
                    std::thread::spawn(move || {
                        a.complete_read(ObjectKey::from_registration(b"k", 0), |expect| {
                            gate.wait(); // both inside their delivery at once
                            assert_eq!(expect, None);
                            Ok(id)
                        })
                    })
                })
                .collect();
            ts.into_iter().for_each(|t| t.join().unwrap());
            match (ids.0 == ids.1, a.status()) {
                (true, Ok(Status::Success)) => {}
                (false, Err(Error::Unverified { why, .. })) => assert!(why.contains("rewritten"), "{why}"),
                (same, other) => panic!("same write {same}: {other:?}"),
            }
        }
    }

    /// Several threads polling an attempt whose one op failed: none may see Success.
    #[test]
    fn concurrent_checks_never_report_success_for_a_failure() {
        for _ in 0..20000 {
            let a = Arc::new(Attempt::new(1, Duration::from_secs(10), None));
            a.complete(Err(Error::NoSuchKey { key: "k".into() }));
            let gate = Arc::new(Barrier::new(4));
            let seen: Vec<_> = (0..4)
                .map(|_| {
                    let (a, gate) = (a.clone(), gate.clone());
                    std::thread::spawn(move || {
                        gate.wait();
                        match a.status() {
                            Ok(s) => s,
                            Err(e) => e.status(),
                        }
                    })
                })
                .collect::<Vec<_>>()
                .into_iter()
                .map(|t| t.join().unwrap())
                .collect();
            assert!(seen.iter().all(|&s| s == Status::Backend), "{seen:?}");
        }
    }
}
