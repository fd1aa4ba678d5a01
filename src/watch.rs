// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//! Keeps this process's pool map fresh while an engine may be failing.
//!
//! libdaos routes each RPC by its cached pool map, and refreshes that map only when an RPC
//! fails (after CaRT's timeout) or a reply says the map moved on. Measured on a three-engine
//! DAOS 2.8 here with the default 60 s CaRT timeout: DAOS excluded a killed engine 23 s after
//! the kill, yet requests posted 30 s and 60 s after the kill were still sent to it and waited
//! the full timeout; nothing succeeded for 90 s. A `daos_pool_query` installs the newest map
//! (`Pool::health`), so once a request times out or DAOS answers with a transport or map error
//! (`poke`), this thread queries the pool every second for as long as such signs keep coming
//! (and `TROUBLE_WINDOW` after the last), and new I/O stops going to an excluded engine within
//! about a second of its exclusion. It also logs the pool's state as it changes, which is what
//! an operator wants to see in the serving process's log.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::daos::{Bound, InitGuard, Pool, PoolHealth};
use crate::error::Error;

/// How often the map is refreshed while there is trouble.
const REFRESH_EVERY: Duration = Duration::from_millis(1000);
/// How long after the last sign of trouble refreshing goes on (DAOS excludes a dead engine
/// 20-35 s after its death with its default failure detection).
const TROUBLE_WINDOW: Duration = Duration::from_secs(60);
/// Bound of one pool query: the pool service leader may be the engine that died (then DAOS
/// elects another, about 7 s), and a query stuck on it must not stop the next one.
const QUERY_BOUND_MS: u64 = 3_000;

#[derive(Default)]
struct Shared {
    /// The last sign of trouble; None once the window after it has passed.
    last: Mutex<Option<Instant>>,
    wake: Condvar,
    stop: AtomicBool,
}

pub struct MapWatch {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl MapWatch {
    /// `known`: the pool's state when the engine was created (logged against later states).
    pub fn start(pool: Arc<Pool>, init: InitGuard, known: Option<PoolHealth>) -> Result<MapWatch, Error> {
        let shared = Arc::new(Shared::default());
        let sh = shared.clone();
        let thread = std::thread::Builder::new()
            .name("nixl-daos-watch".into())
            .spawn(move || {
                // Declared in this order so that the pool is dropped (disconnected) first, and
                // libdaos finalised after, should this thread outlive the engine.
                let _init = init;
                let pool = pool;
                let run = std::panic::AssertUnwindSafe(|| watch(&sh, &pool, known));
                if std::panic::catch_unwind(run).is_err() {
                    tracing::error!("DAOS pool-map thread panicked; the pool map is refreshed only by libdaos now");
                }
            })
            .map_err(|source| Error::Spawn { what: "the DAOS pool-map thread", source })?;
        Ok(MapWatch { shared, thread: Some(thread) })
    }

    /// A callback for the lanes and the engine: a sign that the pool map may have changed.
    pub fn poker(&self) -> Arc<dyn Fn() + Send + Sync> {
        let sh = self.shared.clone();
        Arc::new(move || poke(&sh))
    }

    /// Stops the thread, waiting at most `grace` (it may be inside a bounded pool query).
    pub fn stop(&mut self, grace: Duration) {
        self.shared.stop.store(true, Ordering::Release);
        {
            let _g = self.shared.last.lock();
            self.shared.wake.notify_all();
        }
        let Some(t) = self.thread.take() else { return };
        if !crate::join::join_within(t, grace) {
            tracing::debug!("DAOS pool-map thread still in a pool query after {grace:?}; left to finish on its own");
        }
    }
}

impl Drop for MapWatch {
    fn drop(&mut self) {
        self.stop(Duration::from_millis(1000));
    }
}

fn poke(sh: &Shared) {
    let mut last = sh.last.lock();
    let first = last.is_none();
    *last = Some(Instant::now());
    if first {
        sh.wake.notify_all();
    }
}

fn watch(sh: &Shared, pool: &Pool, mut known: Option<PoolHealth>) {
    loop {
        {
            let mut last = sh.last.lock();
            while last.is_none() && !sh.stop.load(Ordering::Acquire) {
                sh.wake.wait(&mut last);
            }
        }
        if sh.stop.load(Ordering::Acquire) {
            return;
        }
        let t = Instant::now();
        let r = match crate::host::drive() {
            Some(_drive) => pool.health(Bound::from_now(QUERY_BOUND_MS)),
            None => return, // the host is exiting
        };
        match r {
            Ok(h) => {
                report(pool, known, h);
                known = Some(h);
            }
            Err(e) => tracing::debug!(pool = %pool.label, "refreshing the pool map: {e}"),
        }
        let mut last = sh.last.lock();
        if last.is_some_and(|l| l.elapsed() > TROUBLE_WINDOW) {
            *last = None;
            continue;
        }
        let left = REFRESH_EVERY.saturating_sub(t.elapsed());
        if !left.is_zero() && !sh.stop.load(Ordering::Acquire) {
            sh.wake.wait_for(&mut last, left);
        }
    }
}

/// Logs a change of the pool's excluded targets.
fn report(pool: &Pool, before: Option<PoolHealth>, now: PoolHealth) {
    let was = before.map_or(0, |b| b.disabled);
    if now.disabled > was {
        tracing::warn!(
            pool = %pool.label, map_version = now.map_version,
            "DAOS excluded {} of the pool's {} targets: I/O goes to the other engines now",
            now.disabled, now.targets
        );
    } else if now.disabled < was {
        tracing::info!(
            pool = %pool.label, map_version = now.map_version,
            "DAOS pool has {} of {} targets excluded (was {was})", now.disabled, now.targets
        );
    }
}
