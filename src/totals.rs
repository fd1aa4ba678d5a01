// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//! What the plugin moved in this process, counted by the plugin itself: requests, the keys and
//! bytes they carried, and the DAOS RPCs they took, per direction and outcome.
//!
//! A consumer's own counters say what it asked for; these say what DAOS answered, so an
//! end-to-end test can check one against the other (a KV chunk LMCache counts as a hit must
//! be a key this plugin read from DAOS). Process-wide, because the hosts that need them most
//! (vLLM, LMCache) never destroy their NIXL agent: the totals are logged, and with
//! `NIXL_DAOS_STATS_FILE` set appended to that file as one JSON line, when the process exits
//! (or on `report()`). The file is created with mode 0600; a link at its name, or a file that
//! is not this user's, is refused with a warning.

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::engine::XferOp;

/// Where the exit report goes (appended, one JSON object per line and process).
pub const STATS_FILE_ENV: &str = "NIXL_DAOS_STATS_FILE";

#[derive(Default)]
struct Direction {
    /// Requests that ended in success, and the keys and bytes they carried.
    ok: AtomicU64,
    keys: AtomicU64,
    bytes: AtomicU64,
    /// Requests that ended in an error (a missing key, a timeout, a DAOS error).
    failed: AtomicU64,
    /// Of `failed`, reads of a key that does not exist (a cache miss, not a fault).
    missing: AtomicU64,
    /// DAOS RPCs that completed, and those of them that failed.
    rpcs: AtomicU64,
    rpc_errors: AtomicU64,
}

impl Direction {
    const fn new() -> Direction {
        Direction {
            ok: AtomicU64::new(0),
            keys: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            missing: AtomicU64::new(0),
            rpcs: AtomicU64::new(0),
            rpc_errors: AtomicU64::new(0),
        }
    }

    fn json(&self) -> String {
        let n = |a: &AtomicU64| a.load(Ordering::Relaxed);
        format!(
            "{{\"ok\":{},\"keys\":{},\"bytes\":{},\"failed\":{},\"missing\":{},\"rpcs\":{},\"rpc_errors\":{}}}",
            n(&self.ok),
            n(&self.keys),
            n(&self.bytes),
            n(&self.failed),
            n(&self.missing),
            n(&self.rpcs),
            n(&self.rpc_errors)
        )
    }
}

static READS: Direction = Direction::new();
static WRITES: Direction = Direction::new();

fn of(op: XferOp) -> &'static Direction {
    match op {
        XferOp::Read => &READS,
        XferOp::Write => &WRITES,
    }
}

/// How a request ended, as `checkXfer` reported it (once per posting).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Ok,
    Missing,
    Failed,
}

pub fn request(op: XferOp, outcome: Outcome, keys: usize, bytes: u64) {
    let d = of(op);
    match outcome {
        Outcome::Ok => {
            d.ok.fetch_add(1, Ordering::Relaxed);
            d.keys.fetch_add(keys as u64, Ordering::Relaxed);
            d.bytes.fetch_add(bytes, Ordering::Relaxed);
        }
        Outcome::Missing => {
            d.failed.fetch_add(1, Ordering::Relaxed);
            d.missing.fetch_add(1, Ordering::Relaxed);
        }
        Outcome::Failed => {
            d.failed.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// One transfer RPC (update or fetch) that DAOS completed.
pub fn rpc(op: XferOp, ok: bool) {
    let d = of(op);
    d.rpcs.fetch_add(1, Ordering::Relaxed);
    if !ok {
        d.rpc_errors.fetch_add(1, Ordering::Relaxed);
    }
}

/// The totals as one JSON object.
pub fn json() -> String {
    format!("{{\"pid\":{},\"reads\":{},\"writes\":{}}}", std::process::id(), READS.json(), WRITES.json())
}

/// Whether anything was moved (an idle process reports nothing).
fn any() -> bool {
    [&READS, &WRITES]
        .iter()
        .any(|d| d.rpcs.load(Ordering::Relaxed) + d.ok.load(Ordering::Relaxed) + d.failed.load(Ordering::Relaxed) > 0)
}

/// At process exit (from the C exit handler: `log::exit_line`, not `tracing`): one log line at
/// INFO, and the JSON line appended to `$NIXL_DAOS_STATS_FILE` when it is set.
pub fn report_at_exit() {
    if !any() {
        return;
    }
    let line = json();
    crate::log::exit_line(tracing::Level::INFO, &format!("DAOS backend totals for this process: {line}"));
    if let Some(path) = std::env::var_os(STATS_FILE_ENV) {
        // One write of the whole line, O_APPEND: lines of processes sharing the file do not mix.
        // Opened without following a link, and only if the file is this user's
        // (`crate::private_file`): the name may be in a directory others can write.
        let path = std::path::Path::new(&path);
        let written = match crate::private_file::open_append(path) {
            Ok(mut f) => f.write_all(format!("{line}\n").as_bytes()).map_err(|e| format!("{}: {e}", path.display())),
            Err(e) => Err(e.to_string()),
        };
        if let Err(e) = written {
            crate::log::exit_line(
                tracing::Level::WARN,
                &format!("could not append the totals ({STATS_FILE_ENV}): {e}"),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_requests_and_rpcs_per_direction() {
        // Process-wide counters: compare before and after rather than against zero.
        let before = |d: &Direction| {
            (
                d.ok.load(Ordering::Relaxed),
                d.keys.load(Ordering::Relaxed),
                d.missing.load(Ordering::Relaxed),
                d.rpc_errors.load(Ordering::Relaxed),
            )
        };
        let (r0, w0) = (before(&READS), before(&WRITES));
        request(XferOp::Read, Outcome::Ok, 3, 300);
        request(XferOp::Read, Outcome::Missing, 2, 200);
        rpc(XferOp::Read, false);
        request(XferOp::Write, Outcome::Ok, 1, 10);
        let (r1, w1) = (before(&READS), before(&WRITES));
        assert!(r1.0 > r0.0 && r1.1 >= r0.1 + 3 && r1.2 > r0.2 && r1.3 > r0.3);
        assert!(w1.0 > w0.0 && w1.1 > w0.1);
        let j = json();
        assert!(j.starts_with("{\"pid\":") && j.contains("\"reads\":{\"ok\":") && j.contains("\"writes\":{"), "{j}");
    }
}
