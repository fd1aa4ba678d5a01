//! One posting of a transfer request: how many of its folds DAOS still holds, its first error,
//! its deadline, and the one status `checkXfer` reports for it.
//!
//! A request is reported finished only when none of its folds can still touch the caller's
//! buffers, or when its deadline has passed (then DAOS may still complete some, which the
//! deadline contract accepts: DAOS cannot abort an RPC). An early failure of one fold therefore
//! waits for its siblings, and folds not yet handed to DAOS are dropped once the attempt has
//! failed, been cancelled (released or reposted) or passed its deadline.

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::error::{Error, Status};

pub struct Attempt {
    total: usize,
    remaining: AtomicUsize,
    failed: AtomicBool,
    cancelled: AtomicBool,
    error: Mutex<Option<Error>>,
    deadline: Instant,
    timeout_ms: u64,
    /// `Status::InProgress` until the first terminal status is reported; then that status.
    reported: AtomicI32,
}

impl Attempt {
    pub fn new(ops: usize, timeout: Duration) -> Attempt {
        Attempt {
            total: ops,
            remaining: AtomicUsize::new(ops),
            failed: AtomicBool::new(false),
            cancelled: AtomicBool::new(false),
            error: Mutex::new(None),
            deadline: Instant::now() + timeout,
            timeout_ms: timeout.as_millis() as u64,
            reported: AtomicI32::new(Status::InProgress as i32),
        }
    }

    /// Operations not yet completed (launched or still queued).
    pub fn remaining(&self) -> usize {
        self.remaining.load(Ordering::Acquire)
    }

    /// True while a repost would race with this attempt's I/O.
    pub fn busy(&self) -> bool {
        self.remaining() > 0 && Instant::now() < self.deadline
    }

    /// Nobody will read this attempt's outcome any more (released or reposted).
    pub fn cancel(&self) {
        self.cancelled.store(true, Ordering::Release);
    }

    /// Whether an operation of this attempt that is still queued should go to DAOS.
    pub fn wants_launch(&self) -> bool {
        !self.failed.load(Ordering::Acquire) && !self.cancelled.load(Ordering::Acquire) && Instant::now() < self.deadline
    }

    /// Records the outcome of one operation. The error is stored before the counter drops, so a
    /// reader that sees `remaining() == 0` sees every error.
    pub fn complete(&self, result: Result<(), Error>) {
        if let Err(e) = result {
            let mut slot = self.error.lock().unwrap();
            if !self.failed.swap(true, Ordering::AcqRel) {
                *slot = Some(e);
            }
        }
        self.remaining.fetch_sub(1, Ordering::AcqRel);
    }

    /// Completes an operation that was dropped before reaching DAOS (see `wants_launch`).
    pub fn skip(&self) {
        let result = if Instant::now() >= self.deadline && !self.failed.load(Ordering::Acquire) {
            Err(self.timeout(1))
        } else {
            Ok(()) // failed already (its error is kept) or cancelled (nobody asks)
        };
        self.complete(result);
    }

    fn timeout(&self, n: usize) -> Error {
        Error::Timeout { what: format!("{n} of {} DAOS RPC(s) of this request", self.total), ms: self.timeout_ms }
    }

    /// `checkXfer`: never blocks. Returns the terminal outcome once (as an error to log, for a
    /// failure) and the same status on every later call.
    pub fn status(&self) -> Result<Status, Error> {
        let reported = self.reported.load(Ordering::Acquire);
        if reported != Status::InProgress as i32 {
            return Ok(Status::from_raw(reported));
        }
        let remaining = self.remaining();
        let outcome = if remaining == 0 {
            match self.error.lock().unwrap().take() {
                Some(e) => Err(e),
                None => Ok(Status::Success),
            }
        } else if Instant::now() >= self.deadline {
            self.cancel();
            Err(self.error.lock().unwrap().take().unwrap_or_else(|| self.timeout(remaining)))
        } else {
            return Ok(Status::InProgress);
        };
        let status = match &outcome {
            Ok(s) => *s,
            Err(e) => e.status(),
        };
        match self.reported.compare_exchange(Status::InProgress as i32, status as i32, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => outcome,
            Err(first) => Ok(Status::from_raw(first)), // another thread reported it
        }
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
        a.complete(Ok(()));
        assert_eq!(a.status().unwrap(), Status::InProgress);
        a.complete(Ok(()));
        assert_eq!(a.status().unwrap(), Status::Success);
        assert_eq!(a.status().unwrap(), Status::Success);
    }

    #[test]
    fn an_early_failure_waits_for_its_siblings() {
        let a = Attempt::new(2, Duration::from_secs(10));
        a.complete(Err(missing()));
        assert!(!a.wants_launch(), "queued siblings of a failed request are dropped");
        assert_eq!(a.status().unwrap(), Status::InProgress, "a sibling may still write the buffer");
        assert!(a.busy());
        a.complete(Ok(()));
        assert!(matches!(a.status(), Err(Error::NoSuchKey { .. })));
        assert_eq!(a.status().unwrap(), Status::Backend, "the same status, reported once as an error");
    }

    #[test]
    fn deadline_reports_a_timeout_and_cancels() {
        let a = Attempt::new(3, Duration::from_millis(20));
        a.complete(Ok(()));
        assert!(a.wants_launch());
        std::thread::sleep(Duration::from_millis(30));
        assert!(!a.busy());
        match a.status() {
            Err(Error::Timeout { what, ms }) => {
                assert_eq!(ms, 20);
                assert!(what.starts_with("2 of 3"), "{what}");
            }
            other => panic!("{other:?}"),
        }
        assert!(!a.wants_launch());
        // Late completions change nothing for the caller.
        a.complete(Ok(()));
        a.skip();
        assert_eq!(a.status().unwrap(), Status::Backend);
    }

    #[test]
    fn skipped_after_the_deadline_is_a_timeout() {
        let a = Attempt::new(1, Duration::from_millis(5));
        std::thread::sleep(Duration::from_millis(10));
        a.skip();
        assert!(matches!(a.status(), Err(Error::Timeout { .. })));
    }
}
