// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//! nixl-daos: a DAOS storage backend for NIXL, loaded by NIXL as `libplugin_DAOS.so`.
//!
//! Data flows top to bottom: the C++ shim (src/shim) presents NIXL's engine vtable and calls
//! `ffi`; the `engine` parses its `config`, plans each transfer into `planner::Fold`s (one
//! DAOS RPC per dkey), and hands them to the `lanes` (event queues with progress threads) over
//! the safe `daos` layer. Every transfer goes through the plugin's `stage` buffers, and every
//! value carries its `record` (write id, length, block checksums), verified on every read.

#![allow(non_snake_case)] // the crate name is fixed by NIXL: libplugin_DAOS.so

// The crate's real interface is its C ABI (`ffi`, exported by #[no_mangle] whatever the module's
// visibility). The four public modules are the test-facing API: tests/engine_sim.rs drives an
// `Engine` directly (config, requests, errors and statuses, object keys) against daos-sim.
// Nothing else is public; it is not a Rust library API and carries no stability promise.
mod attempt;
pub mod config;
mod cuda;
mod daos;
pub mod engine;
pub mod error;
mod evict;
mod ffi;
mod host;
mod host_memory;
mod join;
pub mod key;
mod lanes;
mod log;
// Only the standalone build (its own shim) probes the host's NIXL: in NIXL's meson builds the
// shim is compiled against that NIXL's headers.
#[cfg(any(nd_shim, test))]
mod nixl_version;
mod planner;
mod private_file;
mod record;
mod registry;
mod stage;
mod stream_copy;
mod totals;
mod watch;

/// Settings of the crate's property tests (proptest, `cargo test --release`): `cases` random
/// inputs per property, so the whole set runs in seconds, and no regression files written into
/// the tree (a failure prints its minimal input). `PROPTEST_CASES` overrides the count for a
/// longer run: `PROPTEST_CASES=100000 cargo test --release --lib props`.
#[cfg(test)]
fn fuzz(cases: u32) -> proptest::test_runner::Config {
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(cases);
    proptest::test_runner::Config { cases, failure_persistence: None, ..proptest::test_runner::Config::default() }
}
