//! One posting of a transfer request: how many of its folds DAOS still holds, its first error,
//! its deadline, and the one status `checkXfer` reports for it.
//!
//! A request is reported finished only when none of its folds can still touch the caller's
//! buffers, or when its deadline has passed (then DAOS may still complete some, which the
//! deadline contract accepts: DAOS cannot abort an RPC). An early failure of one fold therefore
//! waits for its siblings, and folds not yet handed to DAOS are dropped once the attempt has
//! failed, been cancelled (released or reposted) or passed its deadline.
//!
//! Everything that decides an outcome (launch or drop a fold, count it back, report the
//! terminal status) happens under one lock, so a fold can never be launched after the attempt
//! was given up, and concurrent `checkXfer` callers all see the one status decided first.
//! The lock is taken once per fold launch and completion, and once per `checkXfer`.

use parking_lot::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::error::{Error, Status};

/// How often a waiting release checks whether the host is exiting.
const DRAIN_SLICE: Duration = Duration::from_millis(50);

#[derive(Default)]
struct State {
    /// Folds not yet completed: still queued in a lane, or inside DAOS.
    remaining: usize,
    /// Folds handed to DAOS and not yet reaped: these may still touch the caller's buffers.
    in_daos: usize,
    /// One fold failed; queued siblings are dropped.
    failed: bool,
    /// Released or reposted: nobody reads the outcome, queued folds are dropped.
    cancelled: bool,
    /// The first error, until the terminal status is reported.
    error: Option<Error>,
    /// The terminal status, once decided; every later `status()` returns it.
    reported: Option<Status>,
}

pub struct Attempt {
    total: usize,
    deadline: Instant,
    timeout_ms: u64,
    state: Mutex<State>,
    /// Signalled when `in_daos` drops to zero (release waits on it).
    drained: Condvar,
}

impl Attempt {
    pub fn new(ops: usize, timeout: Duration) -> Attempt {
        Attempt {
            total: ops,
            deadline: Instant::now() + timeout,
            timeout_ms: timeout.as_millis() as u64,
            state: Mutex::new(State { remaining: ops, ..State::default() }),
            drained: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock()
    }

    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    pub fn past_deadline(&self) -> bool {
        Instant::now() >= self.deadline
    }

    /// Folds DAOS holds now.
    pub fn in_daos(&self) -> usize {
        self.lock().in_daos
    }

    fn may_launch(&self, s: &State) -> bool {
        !s.failed && !s.cancelled && s.reported.is_none() && !self.past_deadline()
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

    /// Called by a lane right before handing a fold to DAOS. False: drop the fold instead (and
    /// report it with `skip`); true: the fold counts as inside DAOS until `complete(_, true)`.
    pub fn begin_launch(&self) -> bool {
        let mut s = self.lock();
        if !self.may_launch(&s) {
            return false;
        }
        s.in_daos += 1;
        true
    }

    /// Records the outcome of one fold; `launched`: it went through `begin_launch`.
    pub fn complete(&self, result: Result<(), Error>, launched: bool) {
        let mut s = self.lock();
        if let Err(e) = result {
            if !s.failed {
                s.failed = true;
                s.error = Some(e);
            }
        }
        s.remaining -= 1;
        if launched {
            s.in_daos -= 1;
            if s.in_daos == 0 {
                self.drained.notify_all();
            }
        }
    }

    /// A launched fold came back from DAOS to be sent again later (a write refused for space,
    /// while eviction makes room): it no longer counts as inside DAOS, and stays remaining.
    pub fn requeue(&self) {
        let mut s = self.lock();
        s.in_daos -= 1;
        if s.in_daos == 0 {
            self.drained.notify_all();
        }
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
            if self.past_deadline() && !s.failed {
                Err(self.timeout(1))
            } else {
                Ok(()) // failed already (its error is kept) or cancelled (nobody asks)
            }
        };
        self.complete(result, false);
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
        } else if self.past_deadline() {
            s.cancelled = true;
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

    /// For a release: drops the queued folds and waits until DAOS holds none of them, at most
    /// until the deadline. False when DAOS still holds some then (they may still touch the
    /// caller's buffers), or at once when the host is exiting (nothing drives DAOS any more).
    pub fn drain(&self) -> bool {
        let mut s = self.lock();
        s.cancelled = true;
        while s.in_daos > 0 {
            let left = self.deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || crate::host::exiting() {
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
        let a = Attempt::new(2, Duration::from_secs(10));
        assert_eq!(a.status().unwrap(), Status::InProgress);
        a.complete(Ok(()), false);
        assert_eq!(a.status().unwrap(), Status::InProgress);
        a.complete(Ok(()), false);
        assert_eq!(a.status().unwrap(), Status::Success);
        assert_eq!(a.status().unwrap(), Status::Success);
    }

    #[test]
    fn an_early_failure_waits_for_its_siblings() {
        let a = Attempt::new(3, Duration::from_secs(10));
        assert!(a.begin_launch() && a.begin_launch());
        a.complete(Err(missing()), true);
        assert!(!a.begin_launch(), "queued siblings of a failed request are dropped");
        a.skip();
        assert_eq!(a.status().unwrap(), Status::InProgress, "a sibling may still write the buffer");
        assert!(a.busy());
        a.complete(Ok(()), true);
        assert!(!a.busy());
        assert!(matches!(a.status(), Err(Error::NoSuchKey { .. })));
        assert_eq!(a.status().unwrap(), Status::Backend, "the same status, reported once as an error");
    }

    #[test]
    fn deadline_reports_a_timeout_but_stays_busy_while_daos_holds_a_fold() {
        let a = Attempt::new(3, Duration::from_millis(20));
        a.complete(Ok(()), false);
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
        a.complete(Ok(()), true);
        a.skip();
        assert_eq!(a.status().unwrap(), Status::Backend);
        assert!(!a.busy() && a.retire() && a.drain());
    }

    #[test]
    fn drain_waits_for_the_folds_daos_holds_and_drops_queued_ones() {
        let a = std::sync::Arc::new(Attempt::new(2, Duration::from_secs(10)));
        assert!(a.begin_launch());
        let b = a.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            b.complete(Ok(()), true);
        });
        let t0 = Instant::now();
        assert!(a.drain());
        assert!(t0.elapsed() >= Duration::from_millis(40), "returned before DAOS let go");
        assert!(!a.begin_launch(), "a released attempt launches nothing more");
        t.join().unwrap();
    }

    #[test]
    fn skipped_after_the_deadline_is_a_timeout() {
        let a = Attempt::new(1, Duration::from_millis(5));
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
            let a = Arc::new(Attempt::new(1, Duration::from_secs(10)));
            a.complete(Err(Error::NoSuchKey { key: "k".into() }), false);
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
