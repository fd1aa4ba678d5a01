// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//! The C ABI the C++ shim calls (declared in include/nixl_daos.h). Every entry catches panics:
//! nothing unwinds into C++. Pointers handed out are `Box`es: `nd_engine` is an `Engine`,
//! `nd_md` a `Registration`, `nd_req` a `Request`.
//!
//! Safety contract of every function here (the shim keeps it): pointers are NULL or were
//! handed out by this module and not yet freed; arrays hold the count given.
#![allow(clippy::missing_safety_doc)]

#[cfg(nd_shim)]
use std::ffi::c_void;
use std::ffi::{c_char, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::OnceLock;

use crate::config::{self, Config};
use crate::engine::{Desc, Engine, MemType, Registration, Request, XferOp};
use crate::error::{Error, Status};
use crate::key::ObjectKey;

#[repr(C)]
pub struct NdParam {
    pub key: *const c_char,
    pub value: *const c_char,
}

#[repr(C)]
pub struct NdStr {
    pub ptr: *const c_char,
    pub len: usize,
}

/// `nd_key`: an OBJ key as NIXL gives it (metaInfo and devId); `ObjectKey::from_registration`
/// applies the rule.
#[repr(C)]
pub struct NdKey {
    pub meta: NdStr,
    pub dev_id: u64,
}

#[repr(C)]
pub struct NdDesc {
    pub addr: u64,
    pub len: u64,
    pub dev_id: u64,
    pub md: *const Registration,
}

fn guard(what: &str, f: impl FnOnce() -> i32) -> i32 {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(rc) => rc,
        Err(p) => {
            let msg = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            tracing::error!("DAOS backend: internal error in {what}: {msg}");
            Status::Backend as i32
        }
    }
}

fn fail(what: &str, e: Error) -> i32 {
    match e {
        // Said at create_backend (WARN) and with the first refusal (ERROR, for hosts that log
        // errors only); a consumer retrying its writes gets the status alone afterwards.
        Error::ReadOnly(_) => {
            static SAID: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
            if SAID.swap(true, std::sync::atomic::Ordering::Relaxed) {
                tracing::debug!("DAOS backend: {what}: {e}");
            } else {
                tracing::error!("DAOS backend: {what}: {e} (said once; later refusals are not logged)");
            }
        }
        _ => tracing::error!("DAOS backend: {what}: {e}"),
    }
    e.status() as i32
}

/// # Safety
/// A non-null `s.ptr` points at `s.len` readable bytes that outlive `'a`.
unsafe fn bytes<'a>(s: &NdStr) -> &'a [u8] {
    if s.ptr.is_null() || s.len == 0 {
        &[]
    } else {
        // SAFETY: non-null and `s.len` bytes long, by this function's contract.
        unsafe { std::slice::from_raw_parts(s.ptr.cast(), s.len) }
    }
}

/// # Safety
/// A non-null `p` points at `n` descriptors whose `md` is NULL or a live `Registration`, all
/// outliving `'a`.
unsafe fn descs<'a>(p: *const NdDesc, n: usize) -> Vec<Desc<'a>> {
    if p.is_null() || n == 0 {
        return Vec::new();
    }
    // SAFETY: non-null and `n` descriptors long, by this function's contract.
    let all = unsafe { std::slice::from_raw_parts(p, n) };
    all.iter()
        // SAFETY: `md` is NULL or a Registration handed out by nd_register and not yet freed.
        .map(|d| Desc { addr: d.addr, len: d.len, dev_id: d.dev_id, reg: unsafe { d.md.as_ref() } })
        .collect()
}

#[cfg(nd_shim)]
extern "C" {
    fn nd_shim_plugin_init() -> *mut c_void;
    fn nd_shim_plugin_fini();
}

/// NIXL's entry point: the plugin table (built by the shim).
#[cfg(nd_shim)]
#[no_mangle]
pub extern "C" fn nixl_plugin_init() -> *mut c_void {
    crate::log::init();
    use crate::nixl_version::{host_nixl, Host, ALLOW_ENV, SUPPORTED};
    match host_nixl() {
        Host::TooOld => {
            tracing::error!(
                "DAOS backend: this NIXL predates 1.0 and its backend engine ABI differs from the one \
                 this plugin implements ({SUPPORTED}); not loading. Upgrade NIXL (pip install 'nixl>=1.0')"
            );
            return std::ptr::null_mut();
        }
        Host::TooNew(v) if std::env::var(ALLOW_ENV).as_deref() != Ok("1") => {
            tracing::error!(
                "DAOS backend: this is NIXL {v}, and this plugin implements the backend engine ABI of \
                 {SUPPORTED}, the releases it was tested with; not loading. Use a plugin built for NIXL {v}, \
                 or set {ALLOW_ENV}=1 to load it anyway (a changed ABI then fails in ways this check exists to \
                 prevent)"
            );
            return std::ptr::null_mut();
        }
        Host::TooNew(v) => {
            tracing::warn!("DAOS backend: loading into NIXL {v}, past the tested {SUPPORTED}, because {ALLOW_ENV}=1")
        }
        Host::Supported | Host::Unknown => {}
    }
    // SAFETY: the shim's init takes no arguments and only builds its static plugin table.
    catch_unwind(|| unsafe { nd_shim_plugin_init() }).unwrap_or(std::ptr::null_mut())
}

#[cfg(nd_shim)]
#[no_mangle]
pub extern "C" fn nixl_plugin_fini() {
    // SAFETY: the shim's fini takes no arguments; NIXL calls it once, after its last engine.
    let _ = catch_unwind(|| unsafe { nd_shim_plugin_fini() });
}

/// Sends our log lines to the host's logger from the first engine on (see crate::log).
#[no_mangle]
pub extern "C" fn nd_set_log_sink(sink: Option<crate::log::Sink>) -> i32 {
    let Some(sink) = sink else {
        return Status::InvalidParam as i32;
    };
    // A second sink is ignored: the first one may already be in use.
    crate::log::set_sink(sink);
    Status::Success as i32
}

#[no_mangle]
pub extern "C" fn nd_plugin_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

#[no_mangle]
pub unsafe extern "C" fn nd_plugin_params(out: *mut NdParam, cap: usize) -> usize {
    static PARAMS: OnceLock<Vec<(CString, CString)>> = OnceLock::new();
    let params = PARAMS.get_or_init(|| {
        config::defaults(&config::process_env)
            .into_iter()
            .map(|(k, v)| (CString::new(k).unwrap(), CString::new(v.replace('\0', "")).unwrap()))
            .collect()
    });
    if !out.is_null() {
        for (i, (k, v)) in params.iter().take(cap).enumerate() {
            // SAFETY: a non-null `out` holds `cap` slots and `i < cap`; the strings are static.
            unsafe { *out.add(i) = NdParam { key: k.as_ptr(), value: v.as_ptr() } };
        }
    }
    params.len()
}

#[no_mangle]
pub unsafe extern "C" fn nd_engine_create(params: *const NdParam, n: usize, out: *mut *mut Engine) -> i32 {
    crate::log::init();
    guard("create_backend", || {
        if out.is_null() {
            return Status::InvalidParam as i32;
        }
        // SAFETY: `out` is non-null (checked above) and points at the caller's slot.
        unsafe { *out = std::ptr::null_mut() };
        let mut kv = Vec::with_capacity(n);
        if !params.is_null() {
            // SAFETY: a non-null `params` holds `n` entries (module contract).
            for p in unsafe { std::slice::from_raw_parts(params, n) } {
                if p.key.is_null() || p.value.is_null() {
                    continue;
                }
                // SAFETY: non-null keys and values are NUL-terminated C strings (module contract).
                let (k, v) = unsafe { (CStr::from_ptr(p.key), CStr::from_ptr(p.value)) };
                kv.push((k.to_string_lossy().into_owned(), v.to_string_lossy().into_owned()));
            }
        }
        match Config::from_params(&kv).and_then(Engine::create) {
            Ok(engine) => {
                // SAFETY: `out` is non-null (checked above).
                unsafe { *out = Box::into_raw(Box::new(engine)) };
                Status::Success as i32
            }
            Err(e) => fail("create_backend failed", e),
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn nd_engine_destroy(engine: *mut Engine) {
    guard("engine teardown", || {
        if !engine.is_null() {
            // SAFETY: a non-null engine came from nd_engine_create and NIXL destroys it once.
            let engine = unsafe { Box::from_raw(engine) };
            if let Err(e) = engine.check_process() {
                // Dropping would join lane threads that do not exist here and close DAOS
                // handles through the parent's connections: leave it all.
                tracing::warn!("DAOS backend teardown skipped: {e}");
                std::mem::forget(engine);
            }
        }
        0
    });
}

#[no_mangle]
pub unsafe extern "C" fn nd_register(
    engine: *mut Engine,
    mem_type: i32,
    addr: u64,
    len: u64,
    dev_id: u64,
    meta: NdStr,
    out: *mut *mut Registration,
) -> i32 {
    guard("registerMem", || {
        // SAFETY: `engine` is NULL or a live Engine from nd_engine_create (module contract).
        let (Some(engine), false) = (unsafe { engine.as_ref() }, out.is_null()) else {
            return Status::InvalidParam as i32;
        };
        // SAFETY: `out` is non-null (checked above) and points at the caller's slot.
        unsafe { *out = std::ptr::null_mut() };
        let Some(mem) = MemType::from_raw(mem_type) else {
            return fail("registerMem", Error::InvalidArg(format!("unknown memory type {mem_type}")));
        };
        // SAFETY: `meta` is NULL or `meta.len` bytes valid for this call (module contract).
        match engine.register(mem, dev_id, addr, len, unsafe { bytes(&meta) }) {
            Ok(Some(reg)) => {
                // SAFETY: `out` is non-null (checked above).
                unsafe { *out = Box::into_raw(reg) };
                Status::Success as i32
            }
            Ok(None) => Status::Success as i32,
            Err(e) => fail("registerMem", e),
        }
    })
}

/// # Safety
/// `engine` is NULL or an engine from nd_engine_create that is not destroyed.
#[no_mangle]
pub unsafe extern "C" fn nd_supports_vram(engine: *mut Engine) -> i32 {
    guard("getSupportedMems", || {
        // SAFETY: NULL or a live engine, by this function's contract.
        let vram = match unsafe { engine.as_ref() } {
            Some(e) => e.supports_vram(),
            None => crate::cuda::Cuda::probe().is_some(),
        };
        i32::from(vram)
    })
}

#[no_mangle]
pub unsafe extern "C" fn nd_deregister(_engine: *mut Engine, md: *mut Registration) -> i32 {
    guard("deregisterMem", || {
        if !md.is_null() {
            // In-flight requests hold their own copy of the key; dropping it leaves the engine's
            // registry without touching the engine (see crate::registry).
            // SAFETY: a non-null md came from nd_register and NIXL deregisters it once.
            drop(unsafe { Box::from_raw(md) });
        }
        Status::Success as i32
    })
}

#[no_mangle]
pub unsafe extern "C" fn nd_prep_xfer(
    engine: *mut Engine,
    op: i32,
    local_mem: i32,
    local: *const NdDesc,
    n_local: usize,
    remote_mem: i32,
    remote: *const NdDesc,
    n_remote: usize,
    out: *mut *mut Request,
) -> i32 {
    guard("prepXfer", || {
        // SAFETY: `engine` is NULL or a live Engine from nd_engine_create (module contract).
        let (Some(engine), false) = (unsafe { engine.as_ref() }, out.is_null()) else {
            return Status::InvalidParam as i32;
        };
        // SAFETY: `out` is non-null (checked above) and points at the caller's slot.
        unsafe { *out = std::ptr::null_mut() };
        let Some(op) = XferOp::from_raw(op) else {
            return fail("prepXfer", Error::InvalidArg(format!("unknown transfer op {op}")));
        };
        let (Some(lm), Some(rm)) = (MemType::from_raw(local_mem), MemType::from_raw(remote_mem)) else {
            return fail("prepXfer", Error::InvalidArg(format!("unknown memory types {local_mem}/{remote_mem}")));
        };
        // SAFETY: each list is NULL or holds its count of descriptors, whose metadata are NULL or
        // live Registrations (module contract).
        let (local, remote) = unsafe { (descs(local, n_local), descs(remote, n_remote)) };
        match engine.prep(op, lm, &local, rm, &remote) {
            Ok(req) => {
                // SAFETY: `out` is non-null (checked above).
                unsafe { *out = Box::into_raw(req) };
                Status::Success as i32
            }
            Err(e) => fail("prepXfer", e),
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn nd_post_xfer(engine: *mut Engine, req: *mut Request) -> i32 {
    guard("postXfer", || {
        // SAFETY: each is NULL or a live object this module handed out (module contract).
        let (Some(engine), Some(req)) = (unsafe { (engine.as_ref(), req.as_ref()) }) else {
            return Status::InvalidParam as i32;
        };
        match engine.check_process().and_then(|_| engine.post(req)) {
            Ok(s) => s as i32,
            Err(e) => fail("postXfer", e),
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn nd_check_xfer(engine: *mut Engine, req: *mut Request) -> i32 {
    guard("checkXfer", || {
        // SAFETY: each is NULL or a live object this module handed out (module contract).
        let (Some(engine), Some(req)) = (unsafe { (engine.as_ref(), req.as_ref()) }) else {
            return Status::InvalidParam as i32;
        };
        match engine.check(req) {
            Ok(s) => s as i32,
            Err(e) => e.status() as i32, // logged by the engine, once
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn nd_release_req(engine: *mut Engine, req: *mut Request) -> i32 {
    guard("releaseReqH", || {
        // SAFETY: each is NULL or a live object this module handed out (module contract).
        let (Some(engine), Some(r)) = (unsafe { (engine.as_ref(), req.as_ref()) }) else {
            return Status::Success as i32;
        };
        match engine.release(r) {
            Ok(()) => {
                // SAFETY: `req` came from nd_prep_xfer, `r` is not used past here, and NIXL
                // releases a request once.
                drop(unsafe { Box::from_raw(req) });
                Status::Success as i32
            }
            // Still DAOS's: the request stays allocated and the caller keeps it.
            Err(e) => fail("releaseReqH", e),
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn nd_query_mem(engine: *mut Engine, keys: *const NdKey, n: usize, sizes: *mut i64) -> i32 {
    guard("queryMem", || {
        // SAFETY: NULL or a live Engine from nd_engine_create (module contract).
        let Some(engine) = (unsafe { engine.as_ref() }) else {
            return Status::InvalidParam as i32;
        };
        if n == 0 {
            return Status::Success as i32;
        }
        if keys.is_null() || sizes.is_null() {
            return Status::InvalidParam as i32;
        }
        // SAFETY: `keys` is non-null (checked above) and holds `n` keys (module contract).
        let keys = unsafe { object_keys(keys, n) };
        match engine.check_process().and_then(|_| engine.query_sizes(&keys)) {
            Ok(found) => {
                // SAFETY: `sizes` is non-null (checked above) and holds `n` slots (module contract).
                let out = unsafe { std::slice::from_raw_parts_mut(sizes, n) };
                for (o, f) in out.iter_mut().zip(found) {
                    *o = f.map(|s| s as i64).unwrap_or(-1);
                }
                Status::Success as i32
            }
            Err(e) => fail("queryMem", e),
        }
    })
}

/// The keys of a C array of `n` `NdKey`s, each by the one key rule of registrations.
///
/// # Safety
/// `keys` is non-null and holds `n` keys, each meta NULL or valid for its length.
unsafe fn object_keys(keys: *const NdKey, n: usize) -> Vec<ObjectKey> {
    // SAFETY: the caller's contract.
    unsafe { std::slice::from_raw_parts(keys, n) }
        .iter()
        // SAFETY: each meta is NULL or valid for its length (the caller's contract).
        .map(|k| ObjectKey::from_registration(unsafe { bytes(&k.meta) }, k.dev_id))
        .collect()
}

/// Removes the values of `n` keys (`Engine::remove_keys`). Not part of NIXL's ABI: for tools
/// (`nixl-daos doctor`) that load the plugin themselves.
///
/// # Safety
/// As nd_query_mem: `engine` NULL or live, `keys` valid for `n` entries.
#[no_mangle]
pub unsafe extern "C" fn nd_remove_keys(engine: *mut Engine, keys: *const NdKey, n: usize) -> i32 {
    guard("removeKeys", || {
        // SAFETY: NULL or a live Engine from nd_engine_create (module contract).
        let Some(engine) = (unsafe { engine.as_ref() }) else {
            return Status::InvalidParam as i32;
        };
        if n == 0 {
            return Status::Success as i32;
        }
        if keys.is_null() {
            return Status::InvalidParam as i32;
        }
        // SAFETY: `keys` is non-null (checked above) and holds `n` keys (module contract).
        let keys = unsafe { object_keys(keys, n) };
        match engine.check_process().and_then(|_| engine.remove_keys(&keys)) {
            Ok(()) => Status::Success as i32,
            Err(e) => fail("removeKeys", e),
        }
    })
}

/// include/nixl_daos.h is the one source of NIXL's numbering across the C ABI: these tests read
/// its `ND_*` constants and hold the Rust side to them.
#[cfg(test)]
mod abi_header {
    use std::collections::HashMap;

    use tracing::Level;

    use crate::engine::{MemType, XferOp};
    use crate::error::Status;

    /// Every `ND_NAME = value` in the header's enums.
    fn constants() -> HashMap<String, i32> {
        let header = include_str!("../include/nixl_daos.h");
        let mut out = HashMap::new();
        for item in header.split(['{', '}', ',', ';', '\n']) {
            let Some((name, value)) = item.split_once('=') else { continue };
            let name = name.trim();
            if !name.starts_with("ND_") {
                continue;
            }
            let value = value.trim().parse().unwrap_or_else(|e| panic!("{name} = {value:?}: {e}"));
            assert!(out.insert(name.to_string(), value).is_none(), "{name} defined twice");
        }
        out
    }

    fn get(c: &HashMap<String, i32>, name: &str) -> i32 {
        *c.get(name).unwrap_or_else(|| panic!("include/nixl_daos.h lacks {name}"))
    }

    #[test]
    fn mem_types_and_ops_match_the_header() {
        let c = constants();
        for (name, mem) in [
            ("ND_MEM_DRAM", MemType::Dram),
            ("ND_MEM_VRAM", MemType::Vram),
            ("ND_MEM_BLK", MemType::Blk),
            ("ND_MEM_OBJ", MemType::Obj),
            ("ND_MEM_FILE", MemType::File),
        ] {
            assert_eq!(MemType::from_raw(get(&c, name)), Some(mem), "{name}");
        }
        assert_eq!(c.keys().filter(|k| k.starts_with("ND_MEM_")).count(), 5, "a memory type Rust does not know");
        assert_eq!(XferOp::from_raw(get(&c, "ND_OP_READ")), Some(XferOp::Read));
        assert_eq!(XferOp::from_raw(get(&c, "ND_OP_WRITE")), Some(XferOp::Write));
        assert_eq!(c.keys().filter(|k| k.starts_with("ND_OP_")).count(), 2, "an op Rust does not know");
    }

    #[test]
    fn statuses_match_the_header() {
        let c = constants();
        let statuses = [
            ("ND_IN_PROG", Status::InProgress),
            ("ND_SUCCESS", Status::Success),
            ("ND_ERR_NOT_POSTED", Status::NotPosted),
            ("ND_ERR_INVALID_PARAM", Status::InvalidParam),
            ("ND_ERR_BACKEND", Status::Backend),
            ("ND_ERR_NOT_ALLOWED", Status::NotAllowed),
            ("ND_ERR_REPOST_ACTIVE", Status::RepostActive),
            ("ND_ERR_NOT_SUPPORTED", Status::NotSupported),
        ];
        for (name, status) in statuses {
            assert_eq!(status as i32, get(&c, name), "{name}");
            assert_eq!(Status::from_raw(get(&c, name)), status, "{name}");
        }
        let in_header = c.keys().filter(|k| k.starts_with("ND_ERR_") || *k == "ND_IN_PROG" || *k == "ND_SUCCESS");
        assert_eq!(in_header.count(), statuses.len(), "a status Rust does not produce");
    }

    #[test]
    fn log_levels_match_the_header() {
        let c = constants();
        for (name, level) in [
            ("ND_LOG_TRACE", Level::TRACE),
            ("ND_LOG_DEBUG", Level::DEBUG),
            ("ND_LOG_INFO", Level::INFO),
            ("ND_LOG_WARN", Level::WARN),
            ("ND_LOG_ERROR", Level::ERROR),
        ] {
            assert_eq!(crate::log::sink_level(level), get(&c, name), "{name}");
        }
    }
}
