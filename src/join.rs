// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//! Joining a background thread that may be inside a DAOS call: wait a bounded time, and leave
//! it to finish on its own past that (it holds its own references to what it uses).

use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Joins `t` if it finishes within `grace`; false when it was left running.
pub fn join_within(t: JoinHandle<()>, grace: Duration) -> bool {
    let until = Instant::now() + grace;
    while !t.is_finished() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(2));
    }
    if !t.is_finished() {
        return false;
    }
    let _ = t.join();
    true
}
