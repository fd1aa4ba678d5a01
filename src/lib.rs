//! nixl-daos: a DAOS storage backend for NIXL, loaded by NIXL as `libplugin_DAOS.so`.
//!
//! Data flows top to bottom: the C++ shim (src/shim) presents NIXL's engine vtable and calls
//! `ffi`; the `engine` parses its `config`, plans each transfer into `planner::Fold`s (one
//! DAOS RPC per key), and hands them to the `lanes` (event queues with progress threads) over
//! the safe `daos` layer.

#![allow(non_snake_case)] // the crate name is fixed by NIXL: libplugin_DAOS.so

pub mod attempt;
pub mod config;
pub mod daos;
pub mod engine;
pub mod error;
pub mod ffi;
pub mod host;
pub mod key;
pub mod lanes;
pub mod log;
pub mod nixl_version;
pub mod planner;
