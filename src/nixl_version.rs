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

/// `nixlBackendEngine::releaseMemView(void*) const` and `nixlAgent::releaseMemView(void*) const`:
/// libnixl.so exports one or both from NIXL 1.0 on.
const SINCE_1_0: [&[u8]; 2] = [b"_ZNK17nixlBackendEngine14releaseMemViewEPv\0", b"_ZNK9nixlAgent14releaseMemViewEPv\0"];

/// The NIXL versions whose engine ABI the shim presents.
pub const SUPPORTED: &str = "NIXL 1.0.0 to 1.5.x";

/// The first NIXL release past the tested range: its engine ABI is unknown to this plugin.
const FIRST_UNTESTED: (u32, u32) = (1, 6);

/// Set to 1, loads the plugin into a NIXL newer than the tested range (with a warning).
pub const ALLOW_ENV: &str = "NIXL_DAOS_ALLOW_UNTESTED_NIXL";

/// What the host's libnixl.so says about its engine ABI.
#[derive(Debug, PartialEq, Eq)]
pub enum Host {
    /// libnixl.so is loaded and has the 1.0+ engine ABI.
    Supported,
    /// libnixl.so is loaded but predates NIXL 1.0.
    TooOld,
    /// libnixl.so is loaded and its wheel names a release past the tested range.
    TooNew(String),
    /// No libnixl.so in the process (static host, or a test harness).
    Unknown,
}

pub fn host_nixl() -> Host {
    // SAFETY: RTLD_NOLOAD never loads a library, so no initialiser runs; it only returns a handle
    // (with its reference count raised, dropped again with `lib`) when libnixl.so is already in
    // the process.
    let lib = match unsafe { Library::open(Some("libnixl.so"), RTLD_LAZY | libc::RTLD_NOLOAD) } {
        Ok(lib) => lib,
        Err(_) => return Host::Unknown,
    };
    // SAFETY: the symbols are only looked up, never called or dereferenced.
    let Some(sym) = SINCE_1_0.iter().find_map(|name| unsafe { lib.get::<*const u8>(name) }.ok()) else {
        return Host::TooOld;
    };
    match wheel_version(*sym as *const libc::c_void) {
        Some(v) if too_new(&v) => Host::TooNew(v),
        _ => Host::Supported,
    }
}

/// The version of the Python wheel whose libnixl.so holds `addr`: its directory
/// (`.nixl_cu12.mesonpy.libs`, in site-packages) beside the wheel's `nixl_cu12-1.5.1.dist-info`
/// (`Version:` of its METADATA). None for a NIXL built from source (no wheel: an in-tree or
/// meson build compiles the shim against that NIXL's own headers).
fn wheel_version(addr: *const libc::c_void) -> Option<String> {
    // SAFETY: Dl_info is plain data; dladdr fills it for an address inside a loaded object,
    // and its file name stays valid while that object is loaded (libnixl.so, held above).
    let path = unsafe {
        let mut info: libc::Dl_info = std::mem::zeroed();
        if libc::dladdr(addr, &mut info) == 0 || info.dli_fname.is_null() {
            return None;
        }
        std::ffi::CStr::from_ptr(info.dli_fname).to_string_lossy().into_owned()
    };
    let libs = std::path::Path::new(&path).parent()?;
    let package = libs.file_name()?.to_str()?.strip_prefix('.')?.strip_suffix(".mesonpy.libs")?.to_string();
    for entry in std::fs::read_dir(libs.parent()?).ok()?.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with(&format!("{package}-")) && name.ends_with(".dist-info") {
            let meta = std::fs::read_to_string(entry.path().join("METADATA")).ok()?;
            return meta.lines().find_map(|l| l.strip_prefix("Version:")).map(|v| v.trim().to_string());
        }
    }
    None
}

/// Whether `version` (as a wheel names it: 1.5.1, 1.6.0rc1) is past the tested range.
fn too_new(version: &str) -> bool {
    let mut parts = version.split(|c: char| !c.is_ascii_digit()).filter(|p| !p.is_empty()).map(|p| p.parse::<u32>());
    match (parts.next(), parts.next()) {
        (Some(Ok(major)), Some(Ok(minor))) => (major, minor) >= FIRST_UNTESTED,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_past_the_tested_range() {
        for v in ["1.6.0", "1.6.0rc1", "2.0.0", "1.10.2"] {
            assert!(too_new(v), "{v}");
        }
        for v in ["1.5.1", "1.0.0", "1.5.9.dev3", "0.10.1", "garbage", ""] {
            assert!(!too_new(v), "{v}");
        }
    }

    #[test]
    fn a_process_without_libnixl_is_unknown() {
        // The Rust test binary links no NIXL.
        assert_eq!(host_nixl(), Host::Unknown);
    }
}
