// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//! daos-sim: our own libdaos-compatible engine, for testing and benchmarking nixl-daos without
//! a DAOS cluster. Built as `libdaos_sim.so` (loaded by the plugin exactly like libdaos) and as
//! an rlib (for Rust tests calling the exported functions directly).
//!
//! See README.md for what it models and what it does not.

pub mod acl;
pub mod api;
pub mod copy;
pub mod cost;
mod errstr;
mod event;
pub mod ffi;
mod handles;
mod hash;
mod io;
pub mod sim;
pub mod space;
mod store;
mod tx;

pub use acl::{daos_acl_from_strs, daos_prop_alloc, daos_prop_free, daos_sim_cont_acl};
pub use api::*;
pub use errstr::{d_errdesc, d_errstr};
pub use ffi::*;
pub use sim::{daos_sim_control, daos_sim_stats};
