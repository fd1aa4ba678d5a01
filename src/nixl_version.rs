// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//! Which NIXL loaded us. The shim presents the engine ABI of NIXL 1.0 to 1.5.x (27 virtual
//! slots). NIXL before 1.0 (0.9.x, 0.10.x) has no `prepMemView`/`releaseMemView` slots, so every
//! slot after them is shifted: such a host would call `queryMem` where it means `registerMem`.
//! Loading must be refused there, with a line that says why, rather than fail later with a bare
//! status.
//!
//! The test: the host's `libnixl.so`, when the process has one loaded, must export a
//! `releaseMemView`, which NIXL added in 1.0 together with those slots: the base engine class's
//! (checked on the nixl-cu12 wheels 0.10.1, 1.0.0 and 1.5.1) or the agent's. The engine's is an
//! inline virtual, emitted as a weak symbol only when the compiler chose to (a debug build of
//! NIXL main has none, and this plugin was refused there); the agent's is an ordinary exported
//! function of every such build. Hosts that link NIXL statically (no `libnixl.so`) are trusted:
//! an in-tree build compiles the shim against that same NIXL.

use libloading::os::unix::{Library, RTLD_LAZY};

/// glibc's RTLD_NOLOAD: return the library only if it is already loaded; never load it.
const RTLD_NOLOAD: i32 = 0x4;

/// `nixlBackendEngine::releaseMemView(void*) const` and `nixlAgent::releaseMemView(void*) const`:
/// libnixl.so exports one or both from NIXL 1.0 on.
const SINCE_1_0: [&[u8]; 2] = [b"_ZNK17nixlBackendEngine14releaseMemViewEPv\0", b"_ZNK9nixlAgent14releaseMemViewEPv\0"];

/// The NIXL versions whose engine ABI the shim presents.
pub const SUPPORTED: &str = "NIXL 1.0.0 to 1.5.x";

/// What the host's libnixl.so says about its engine ABI.
#[derive(Debug, PartialEq, Eq)]
pub enum Host {
    /// libnixl.so is loaded and has the 1.0+ engine ABI.
    Supported,
    /// libnixl.so is loaded but predates NIXL 1.0.
    TooOld,
    /// No libnixl.so in the process (static host, or a test harness).
    Unknown,
}

pub fn host_nixl() -> Host {
    // SAFETY: RTLD_NOLOAD never loads a library, so no initialiser runs; it only returns a handle
    // (with its reference count raised, dropped again with `lib`) when libnixl.so is already in
    // the process.
    let lib = match unsafe { Library::open(Some("libnixl.so"), RTLD_LAZY | RTLD_NOLOAD) } {
        Ok(lib) => lib,
        Err(_) => return Host::Unknown,
    };
    // SAFETY: the symbols are only looked up, never called or dereferenced.
    if SINCE_1_0.iter().any(|name| unsafe { lib.get::<*const u8>(name) }.is_ok()) {
        Host::Supported
    } else {
        Host::TooOld
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_without_libnixl_is_unknown() {
        // The Rust test binary links no NIXL.
        assert_eq!(host_nixl(), Host::Unknown);
    }
}
