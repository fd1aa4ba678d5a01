// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//! One posting of a transfer request: how many of its folds DAOS still holds, its first error,
//! its deadline, and the one status `checkXfer` reports for it.
//!
//! A request is reported finished only when none of its folds can still touch the caller's
//! buffers, or when its deadline has passed. Past the deadline, DAOS may still complete a fold
//! it holds (`daos_event_abort` does nothing in DAOS 2.8, and libdaos retries an RPC to a dead
//! engine until DAOS excludes the engine). What that costs differs by direction:
//!
//! - A **read** that DAOS holds writes into the caller's buffer when it completes. LMCache,
//!   vLLM and KVBM all hand a failed read's buffer straight back to their pools, so the request
//!   is held: it stays in progress past its deadline while DAOS holds a fold, for at most
//!   `hold` more (by then the replicated read has usually been retried on a live copy, and it
//!   reports what DAOS says), and only then fails with a timeout.
//! - A **write** is reported failed at its deadline. DAOS may still land it later, from a
//!   buffer the caller may have refilled; the lanes punch such a key once it lands (see
//!   `crate::lanes`), and fence the key until then.
//!
//! An early failure of one fold waits for its siblings, and folds not yet handed to DAOS are
//! dropped once the attempt has failed, been cancelled (released or reposted) or passed its
//! deadline. Once its timeout is reported, the folds DAOS still holds give their in-flight slots
//! back (`Budget`): a dead engine must not keep the engine's budget full.
//!
//! Everything that decides an outcome (launch or drop a fold, count it back, report the
//! terminal status) happens under one lock, so a fold can never be launched after the attempt
//! was given up, and concurrent `checkXfer` callers all see the one status decided first.
//! The lock is taken once per fold launch and completion, and once per `checkXfer`.

use parking_lot::{Condvar, Mutex, MutexGuard};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::{Error, Status};

/// How often a waiting release checks whether the host is exiting.
const DRAIN_SLICE: Duration = Duration::from_millis(50);

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
    /// Folds handed to DAOS and not yet reaped: these may still touch the caller's buffers.
    in_daos: usize,
    /// Of `in_daos`, those whose in-flight slot was given back when the timeout was reported.
    slots_returned: usize,
    /// One fold failed; queued siblings are dropped.
    failed: bool,
    /// Released or reposted: nobody reads the outcome, queued folds are dropped.
    cancelled: bool,
    /// Reported timed out, or released without DAOS giving its folds back in time: the caller
    /// may have reused the buffers of the folds DAOS still holds.
    given_up: bool,
    /// The first error, until the terminal status is reported.
    error: Option<Error>,
    /// The terminal status, once decided; every later `status()` returns it.
    reported: Option<Status>,
    /// A write refused for space waits for eviction's room until then, past its deadline (see
    /// `wait_for_space`).
    space_until: Option<Instant>,
}

pub struct Attempt {
    total: usize,
    deadline: Instant,
    /// Until when a request whose folds DAOS holds stays in progress past its deadline (reads;
    /// equal to `deadline` for writes).
    hold_until: Instant,
    timeout_ms: u64,
    budget: Option<Arc<Budget>>,
    state: Mutex<State>,
    /// Signalled when `in_daos` drops to zero (release waits on it).
    drained: Condvar,
    /// The terminal status was counted in the process totals (`first_terminal`).
    counted: std::sync::atomic::AtomicBool,
}

impl Attempt {
    /// `hold`: how long past its deadline the request waits for folds DAOS holds (zero: none).
    /// `budget`: where the folds' in-flight slots come from (None in tests of the lifecycle).
    pub fn new(ops: usize, timeout: Duration, hold: Duration, budget: Option<Arc<Budget>>) -> Attempt {
        let deadline = Instant::now() + timeout;
        Attempt {
            total: ops,
            deadline,
            hold_until: deadline + hold,
            timeout_ms: timeout.as_millis() as u64,
            budget,
            state: Mutex::new(State { remaining: ops, ..State::default() }),
            drained: Condvar::new(),
            counted: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// True the first time it is called: the caller counts the terminal status it just read
    /// once (`crate::totals`), however often the request is checked afterwards.
    pub fn first_terminal(&self) -> bool {
        !self.counted.swap(true, std::sync::atomic::Ordering::Relaxed)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock()
    }

    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// Past the deadline, or past the wait for space a refused write was given.
    fn past(&self, s: &State) -> bool {
        let now = Instant::now();
        now >= self.deadline && s.space_until.is_none_or(|u| now >= u)
    }

    /// A fold of this write was refused for space and goes back to wait for eviction's room:
    /// DAOS gives punched space back only when it aggregates (27-31 s after the punch on DAOS
    /// 2.8 here), so the request may go on until `until`, past its deadline. It is not inside
    /// DAOS meanwhile, so an engine failure does not stretch this; the write fence keeps the
    /// original deadline.
    pub fn wait_for_space(&self, until: Instant) {
        let mut s = self.lock();
        s.space_until = Some(s.space_until.map_or(until, |u| u.max(until)));
    }

    /// Folds DAOS holds now.
    pub fn in_daos(&self) -> usize {
        self.lock().in_daos
    }

    /// Whether the caller was told it may reuse the buffers while DAOS held a fold: its
    /// request was reported timed out, or its release stopped waiting at the deadline.
    pub fn abandoned(&self) -> bool {
        self.lock().given_up
    }

    fn may_launch(&self, s: &State) -> bool {
        !s.failed && !s.cancelled && s.reported.is_none() && !self.past(s)
    }

    /// True while a repost would race with this attempt's I/O: DAOS holds one of its folds, or
    /// a queued one may still be launched. Stays true past the deadline while DAOS holds any.
    /// (The engine asks `retire`, which decides the same under one lock; the tests ask this.)
    #[cfg(test)]
    pub fn busy(&self) -> bool {
        let s = self.lock();
        s.in_daos > 0 || (s.remaining > 0 && self.may_launch(&s))
    }

    /// For a repost: gives this attempt up unless it is `busy`. Once it returns true no fold of
    /// this attempt can reach DAOS any more.
    pub fn retire(&self) -> bool {
        let mut s = self.lock();
        if s.in_daos > 0 || (s.remaining > 0 && self.may_launch(&s)) {
            return false;
        }
        s.cancelled = true;
        true
    }

    /// Called by a lane right before handing a fold to DAOS (it holds a slot of the budget).
    /// False: drop the fold instead (and report it with `skip`); true: the fold counts as
    /// inside DAOS until `leave_daos`.
    pub fn begin_launch(&self) -> bool {
        let mut s = self.lock();
        if !self.may_launch(&s) {
            return false;
        }
        s.in_daos += 1;
        true
    }

    /// A launched fold is out of DAOS (completed, refused at launch, or fenced before it).
    /// Returns whether its in-flight slot was given back already (the caller must not give it
    /// back again).
    pub fn leave_daos(&self) -> bool {
        let mut s = self.lock();
        s.in_daos -= 1;
        if s.in_daos == 0 {
            self.drained.notify_all();
        }
        if s.slots_returned > 0 {
            s.slots_returned -= 1;
            true
        } else {
            false
        }
    }

    /// Records the outcome of one fold (after `leave_daos`, for a launched one).
    pub fn complete(&self, result: Result<(), Error>) {
        self.complete_delivered(result, || {});
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
                Err(self.timeout(1))
            } else {
                Ok(()) // failed already (its error is kept) or cancelled (nobody asks)
            }
        };
        self.complete(result);
    }

    fn timeout(&self, n: usize) -> Error {
        Error::Timeout { what: format!("{n} of {} DAOS RPC(s) of this request", self.total), ms: self.timeout_ms }
    }

    /// `checkXfer`: never waits on DAOS. Decides the terminal outcome once, under the lock, and
    /// returns it (as an error to log, for a failure); every later call gets the same status.
    pub fn status(&self) -> Result<Status, Error> {
        let mut s = self.lock();
        if let Some(reported) = s.reported {
            return Ok(reported);
        }
        let outcome = if s.remaining == 0 {
            // `error` is taken only here and below, where `reported` is set in the same
            // critical section: a failed attempt still holds its error.
            match s.error.take() {
                Some(e) => Err(e),
                None => Ok(Status::Success),
            }
        } else if self.past(&s) {
            if s.in_daos > 0 && Instant::now() < self.hold_until {
                // Held: DAOS may still write the caller's buffer (see the module's comment).
                // Queued folds are dropped by now (`may_launch`), so only DAOS's answer is left.
                return Ok(Status::InProgress);
            }
            self.give_up(&mut s);
            Err(s.error.take().unwrap_or_else(|| self.timeout(s.remaining)))
        } else {
            return Ok(Status::InProgress);
        };
        s.reported = Some(match &outcome {
            Ok(st) => *st,
            Err(e) => e.status(),
        });
        outcome
    }

    /// The caller is told it may reuse the buffers (a timeout reported, or a release that
    /// stopped waiting): the folds DAOS still holds are marked given up, and stop counting
    /// against the engine's budget.
    fn give_up(&self, s: &mut State) {
        s.cancelled = true;
        s.given_up |= s.in_daos > 0;
        let held = s.in_daos - s.slots_returned;
        if held > 0 {
            s.slots_returned += held;
            if let Some(b) = &self.budget {
                b.give(held);
            }
        }
    }

    /// Records a fold's outcome like `complete`, and first, for a successful staged read,
    /// runs `deliver` (the copy into the caller's buffers) under the attempt's lock, unless the
    /// caller may already reuse them: a timeout reported, or a release begun (a release waits
    /// only until DAOS gives the fold back, which is before this copy). So the copy never
    /// overlaps either.
    pub fn complete_delivered(&self, result: Result<(), Error>, deliver: impl FnOnce()) {
        let mut s = self.lock();
        match result {
            Ok(()) if !s.given_up && !s.cancelled && s.reported.is_none() => deliver(),
            Ok(()) => {}
            Err(e) => {
                if !s.failed {
                    s.failed = true;
                    s.error = Some(e);
                }
            }
        }
        s.remaining -= 1;
    }

    /// Whether DAOS may still use the buffers after the reported outcome: a held request that
    /// DAOS did not give back before its hold ran out.
    pub fn exposed(&self) -> bool {
        let s = self.lock();
        s.reported.is_some() && s.in_daos > 0 && self.hold_until > self.deadline
    }

    /// For a release: drops the queued folds and waits until DAOS holds none of them, at most
    /// until the hold ends. False when DAOS still holds some then (they may still touch the
    /// caller's buffers), or at once when the host is exiting (nothing drives DAOS any more).
    pub fn drain(&self) -> bool {
        let mut s = self.lock();
        s.cancelled = true;
        while s.in_daos > 0 {
            let left = self.hold_until.saturating_duration_since(Instant::now());
            if left.is_zero() || crate::host::exiting() {
                self.give_up(&mut s);
                return false;
            }
            // Slices, to notice the host exiting.
            let slice = left.min(DRAIN_SLICE);
            self.drained.wait_for(&mut s, slice);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn missing() -> Error {
        Error::NoSuchKey { key: "k".into() }
    }

    #[test]
    fn success_once_all_complete() {
        let a = Attempt::new(2, Duration::from_secs(10), Duration::ZERO, None);
        assert_eq!(a.status().unwrap(), Status::InProgress);
        a.complete(Ok(()));
        assert_eq!(a.status().unwrap(), Status::InProgress);
        a.complete(Ok(()));
        assert_eq!(a.status().unwrap(), Status::Success);
        assert_eq!(a.status().unwrap(), Status::Success);
    }

    #[test]
    fn an_early_failure_waits_for_its_siblings() {
        let a = Attempt::new(3, Duration::from_secs(10), Duration::ZERO, None);
        assert!(a.begin_launch() && a.begin_launch());
        a.leave_daos();
        a.complete(Err(missing()));
        assert!(!a.begin_launch(), "queued siblings of a failed request are dropped");
        a.skip();
        assert_eq!(a.status().unwrap(), Status::InProgress, "a sibling may still write the buffer");
        assert!(a.busy());
        a.leave_daos();
        a.complete(Ok(()));
        assert!(!a.busy());
        assert!(matches!(a.status(), Err(Error::NoSuchKey { .. })));
        assert_eq!(a.status().unwrap(), Status::Backend, "the same status, reported once as an error");
    }

    #[test]
    fn deadline_reports_a_timeout_but_stays_busy_while_daos_holds_a_fold() {
        let a = Attempt::new(3, Duration::from_millis(20), Duration::ZERO, None);
        a.complete(Ok(()));
        assert!(a.begin_launch());
        std::thread::sleep(Duration::from_millis(30));
        assert!(a.busy(), "DAOS still holds a fold: a repost would race with it");
        assert!(!a.retire());
        match a.status() {
            Err(Error::Timeout { what, ms }) => {
                assert_eq!(ms, 20);
                assert!(what.starts_with("2 of 3"), "{what}");
            }
            other => panic!("{other:?}"),
        }
        assert!(!a.begin_launch());
        assert!(!a.drain(), "past the deadline, release cannot wait DAOS out");
        // Late completions change nothing for the caller.
        a.leave_daos();
        a.complete(Ok(()));
        a.skip();
        assert_eq!(a.status().unwrap(), Status::Backend);
        assert!(!a.busy() && a.retire() && a.drain());
    }

    #[test]
    fn drain_waits_for_the_folds_daos_holds_and_drops_queued_ones() {
        let a = std::sync::Arc::new(Attempt::new(2, Duration::from_secs(10), Duration::ZERO, None));
        assert!(a.begin_launch());
        let b = a.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            b.leave_daos();
            b.complete(Ok(()));
        });
        let t0 = Instant::now();
        assert!(a.drain());
        assert!(t0.elapsed() >= Duration::from_millis(40), "returned before DAOS let go");
        assert!(!a.begin_launch(), "a released attempt launches nothing more");
        t.join().unwrap();
    }

    #[test]
    fn a_write_refused_for_space_may_wait_past_its_deadline_until_its_space_wait_ends() {
        let a = Attempt::new(1, Duration::from_millis(20), Duration::ZERO, None);
        assert!(a.begin_launch());
        a.leave_daos(); // refused for space: back in the lanes' retry list
        a.wait_for_space(Instant::now() + Duration::from_millis(150));
        std::thread::sleep(Duration::from_millis(40));
        assert_eq!(a.status().unwrap(), Status::InProgress, "past its deadline, inside its wait for space");
        assert!(a.wants_more() && a.begin_launch(), "the refused write may be sent again");
        a.leave_daos();
        std::thread::sleep(Duration::from_millis(130));
        assert!(!a.wants_more());
        assert!(matches!(a.status(), Err(Error::Timeout { .. })), "the wait for space is bounded too");
    }

    #[test]
    fn skipped_after_the_deadline_is_a_timeout() {
        let a = Attempt::new(1, Duration::from_millis(5), Duration::ZERO, None);
        std::thread::sleep(Duration::from_millis(10));
        a.skip();
        assert!(matches!(a.status(), Err(Error::Timeout { .. })));
    }
}

#[cfg(test)]
mod race_tests {
    use super::*;
    use std::sync::{Arc, Barrier};

    /// Several threads polling an attempt whose one op failed: none may see Success.
    #[test]
    fn concurrent_checks_never_report_success_for_a_failure() {
        for _ in 0..20000 {
            let a = Arc::new(Attempt::new(1, Duration::from_secs(10), Duration::ZERO, None));
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
