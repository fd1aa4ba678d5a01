// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//! Errors of the engine, and the one place they become NIXL statuses.

/// NIXL's `nixl_status_t` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub enum Status {
    InProgress = 1,
    Success = 0,
    NotPosted = -1,
    InvalidParam = -2,
    Backend = -3,
    NotAllowed = -6,
    RepostActive = -7,
    NotSupported = -9,
}

impl Status {
    /// The status for a value this crate produced (`Status as i32`).
    pub fn from_raw(v: i32) -> Status {
        match v {
            1 => Status::InProgress,
            0 => Status::Success,
            -1 => Status::NotPosted,
            -2 => Status::InvalidParam,
            -6 => Status::NotAllowed,
            -7 => Status::RepostActive,
            -9 => Status::NotSupported,
            _ => Status::Backend,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{call} failed: {name} ({rc}){}", der_hint(*rc))]
    Daos { call: &'static str, rc: i32, name: String },
    #[error(
        "cannot load libdaos from {path:?}: {source}. Install the DAOS client (libdaos.so.2), or point \
         the backend parameter daos_lib or the environment variable NIXL_DAOS_LIBDAOS at it"
    )]
    Load {
        path: String,
        #[source]
        source: libloading::Error,
    },
    /// The plugin could not start one of its own threads (the process is out of threads or
    /// memory): not the caller's argument, so BACKEND, not INVALID_PARAM.
    #[error("cannot start {what}: {source}")]
    Spawn {
        what: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("backend parameter {name}={} is invalid: {expected}", shown(value))]
    Param { name: &'static str, value: String, expected: String },
    #[error("{0}")]
    NotSupported(String),
    #[error("{0}")]
    InvalidArg(String),
    /// A DAOS failure explained in context (which pool, what to do), keeping the DER code.
    #[error("{msg}")]
    Context { msg: String, rc: i32 },
    #[error("key {key:?} does not exist in DAOS")]
    NoSuchKey { key: String },
    #[error("short read of key {key:?}: asked for {want} bytes, DAOS holds {got} of them")]
    ShortRead { key: String, want: u64, got: u64 },
    #[error("{what} did not complete within its deadline of {ms} ms")]
    Timeout { what: String, ms: u64 },
    #[error("the engine is shutting down")]
    ShuttingDown,
    /// A copy between the caller's buffers and the plugin's panicked (a bug): the request
    /// fails, since what the copy left behind is unknown.
    #[error("the plugin failed while copying this transfer's bytes (a bug: please report it)")]
    CopyPanicked,
    #[error("a transfer of this request is still in flight")]
    RepostActive,
    /// The memory for a staging buffer could not be had: the operation fails at once rather
    /// than waiting for memory that may never come.
    #[error(
        "cannot allocate a staging buffer of {bytes} bytes: the process is out of memory (or \
         past the system's overcommit limit); lower the backend parameter stage_bytes, or \
         chunk_bytes for a container this plugin creates"
    )]
    StagingMemory { bytes: usize },
    #[error(
        "this DAOS backend was created in process {pid}; a forked child cannot use it (libdaos's \
         connections and threads do not survive fork): create the backend in the child"
    )]
    Forked { pid: u32 },
    /// A value that did not verify: no record of this version's, bytes that are not the
    /// recorded write's, or keys whose chunks hold different writes. A miss, like `NoSuchKey`.
    #[error("key {key:?} is not read: {why}; treat it as absent (write it again)")]
    Unverified { key: String, why: &'static str },
    /// A write to a container this user may only read (`acl::read_only_hint` says why and how
    /// to grant the right).
    #[error("{0}")]
    ReadOnly(String),
    /// A CUDA driver call on the caller's GPU memory failed (the request fails; nothing it
    /// moved is reported done).
    #[error("{call} on CUDA device {device} failed: {name} ({rc})")]
    Cuda { call: &'static str, device: i32, rc: i32, name: String },
}

/// A parameter's value as an error shows it: quoted, and cut after `SHOWN_CHARS` characters
/// with its length said (a garbage value of a megabyte must not become a megabyte of log).
fn shown(value: &str) -> String {
    const SHOWN_CHARS: usize = 64;
    match value.char_indices().nth(SHOWN_CHARS) {
        Some((cut, _)) => format!("{:?}... ({} bytes)", &value[..cut], value.len()),
        None => format!("{value:?}"),
    }
}

/// What a DAOS error code means for the user of the backend, where there is more to say than
/// its name (seen on a real DAOS 2.8 engine).
pub fn der_hint(rc: i32) -> &'static str {
    match -rc {
        // Every call after daos_agent stopped: the agent's departure makes the servers evict
        // the pool handles of the processes it served.
        1002 => {
            ". DAOS no longer knows this process's pool or container handle: it evicts them when \
                 daos_agent stops or restarts, or when an administrator evicts the pool. This backend \
                 cannot recover: once daos_agent runs again, create the backend anew"
        }
        1007 => {
            ". The pool is out of space (overwrites keep older versions until DAOS aggregates them): \
                 free space (destroy unused containers) or grow the pool (`dmg pool extend`/`expand`)"
        }
        _ => "",
    }
}

impl Error {
    /// The NIXL status a caller sees for this error. A failed read of any kind is BACKEND:
    /// LMCache treats exactly `nixlBackendError` on a read as a cache miss.
    pub fn status(&self) -> Status {
        match self {
            Error::Param { .. } | Error::InvalidArg(_) => Status::InvalidParam,
            Error::NotSupported(_) => Status::NotSupported,
            Error::RepostActive => Status::RepostActive,
            Error::ReadOnly(_) => Status::NotAllowed,
            Error::Daos { .. }
            | Error::Load { .. }
            | Error::Spawn { .. }
            | Error::NoSuchKey { .. }
            | Error::ShortRead { .. }
            | Error::Timeout { .. }
            | Error::Context { .. }
            | Error::Forked { .. }
            | Error::Unverified { .. }
            | Error::Cuda { .. }
            | Error::CopyPanicked
            | Error::StagingMemory { .. }
            | Error::ShuttingDown => Status::Backend,
        }
    }

    /// The DAOS error code carried, if any.
    pub fn der(&self) -> Option<i32> {
        match self {
            Error::Daos { rc, .. } | Error::Context { rc, .. } => Some(*rc),
            _ => None,
        }
    }
}

impl Error {
    /// Keeps the DER code of the error being explained, when there is one.
    pub fn with_der(self, rc: Option<i32>) -> Error {
        match (self, rc) {
            (Error::InvalidArg(msg), Some(rc)) => Error::Context { msg, rc },
            (e, _) => e,
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses() {
        let daos = Error::Daos { call: "daos_obj_fetch", rc: -1005, name: "DER_NONEXIST".into() };
        assert_eq!(daos.status(), Status::Backend);
        assert_eq!(daos.der(), Some(-1005));
        assert!(daos.to_string().contains("DER_NONEXIST"));
        assert_eq!(Error::NoSuchKey { key: "k".into() }.status(), Status::Backend);
        assert_eq!(Error::Timeout { what: "x".into(), ms: 5 }.status(), Status::Backend);
        let p = Error::Param { name: "timeout_ms", value: "abc".into(), expected: "an integer".into() };
        assert_eq!(p.status(), Status::InvalidParam);
        assert!(p.to_string().contains("timeout_ms=\"abc\""));
        let long = Error::Param { name: "pool", value: "\u{e9}".repeat(1 << 20), expected: "a label".into() };
        let msg = long.to_string();
        assert!(msg.len() < 300 && msg.contains(&format!("... ({} bytes)", 2 << 20)), "{msg}");
        assert_eq!(Error::NotSupported("VRAM".into()).status(), Status::NotSupported);
        assert_eq!(Error::RepostActive.status(), Status::RepostActive);
        assert_eq!(Status::InProgress as i32, 1);
    }

    /// The whole error-to-status table, one row per variant: a new variant must be added here
    /// (the match below stops compiling otherwise), and so decide its NIXL status on purpose.
    #[test]
    fn status_table() {
        // SAFETY: the path does not exist, so no library (and no initialiser) is loaded.
        let load_err = unsafe { libloading::Library::new("/nonexistent/libdaos.so.2") }.unwrap_err();
        let s = String::new;
        let table = [
            (Error::Daos { call: "daos_obj_fetch", rc: -1005, name: s() }, Status::Backend),
            (Error::Load { path: s(), source: load_err }, Status::Backend),
            (Error::Spawn { what: "a thread", source: std::io::Error::other("no threads") }, Status::Backend),
            (Error::Param { name: "fold", value: s(), expected: s() }, Status::InvalidParam),
            (Error::NotSupported(s()), Status::NotSupported),
            (Error::InvalidArg(s()), Status::InvalidParam),
            (Error::Context { msg: s(), rc: -1005 }, Status::Backend),
            (Error::NoSuchKey { key: s() }, Status::Backend),
            (Error::ShortRead { key: s(), want: 2, got: 1 }, Status::Backend),
            (Error::Timeout { what: s(), ms: 1 }, Status::Backend),
            (Error::ShuttingDown, Status::Backend),
            (Error::CopyPanicked, Status::Backend),
            (Error::StagingMemory { bytes: 1 }, Status::Backend),
            (Error::RepostActive, Status::RepostActive),
            (Error::Forked { pid: 1 }, Status::Backend),
            (Error::Unverified { key: s(), why: "x" }, Status::Backend),
            (Error::ReadOnly(s()), Status::NotAllowed),
            (Error::Cuda { call: "cuMemcpyDtoH_v2", device: 0, rc: 719, name: s() }, Status::Backend),
        ];
        for (e, want) in &table {
            // Exhaustive on purpose: see above.
            match e {
                Error::Daos { .. }
                | Error::Load { .. }
                | Error::Spawn { .. }
                | Error::Param { .. }
                | Error::NotSupported(_)
                | Error::InvalidArg(_)
                | Error::Context { .. }
                | Error::NoSuchKey { .. }
                | Error::ShortRead { .. }
                | Error::Timeout { .. }
                | Error::ShuttingDown
                | Error::CopyPanicked
                | Error::StagingMemory { .. }
                | Error::RepostActive
                | Error::Forked { .. }
                | Error::Unverified { .. }
                | Error::ReadOnly(_)
                | Error::Cuda { .. } => {}
            }
            assert_eq!(e.status(), *want, "{e:?}");
        }
        // The wrapped cause stays reachable for a caller walking the chain.
        use std::error::Error as _;
        assert!(table[1].0.source().is_some() && table[2].0.source().is_some());
        // NIXL's numbering (nixl_types.h), which the shim passes through unchanged.
        let raw = [
            (Status::InProgress, 1),
            (Status::Success, 0),
            (Status::NotPosted, -1),
            (Status::InvalidParam, -2),
            (Status::Backend, -3),
            (Status::NotAllowed, -6),
            (Status::RepostActive, -7),
            (Status::NotSupported, -9),
        ];
        for (st, v) in raw {
            assert_eq!(st as i32, v);
            assert_eq!(Status::from_raw(v), st);
        }
    }

    #[test]
    fn evicted_handles_and_a_full_pool_say_what_to_do() {
        let evicted = Error::Daos { call: "daos_obj_fetch", rc: -1002, name: "DER_NO_HDL".into() }.to_string();
        assert!(
            evicted.contains("DER_NO_HDL")
                && evicted.contains("daos_agent")
                && evicted.contains("create the backend anew"),
            "{evicted}"
        );
        let full = Error::Daos { call: "daos_obj_update", rc: -1007, name: "DER_NOSPACE".into() }.to_string();
        assert!(full.contains("out of space") && full.contains("dmg pool extend"), "{full}");
        let plain = Error::Daos { call: "daos_obj_fetch", rc: -1005, name: "DER_NONEXIST".into() }.to_string();
        assert_eq!(plain, "daos_obj_fetch failed: DER_NONEXIST (-1005)");
    }
}
