// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//! The exported libdaos C API.
//!
//! Every call with `ev != NULL` returns 0 (unless the event itself is unusable) and reports
//! its result through `ev->ev_error` once reaped; with `ev == NULL` it blocks until done.

use std::ffi::CStr;
use std::os::raw::{c_char, c_int};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::cost;
use crate::event::{self, Eq, Task, Work};
use crate::ffi::*;
use crate::handles::{self, ContH, Hdl, ObjH, PoolH};
use crate::io::{self, PunchWhat};
use crate::sim::{self, STATS};
use crate::store::{self, ContData};

// ---------------------------------------------------------------------------------------------
// Helpers

/// Runs or launches a task.
unsafe fn submit(ev: *mut daos_event_t, task: Task) -> c_int {
    // SAFETY: the caller keeps this function's `# Safety` contract, which is all the operations
    // below need.
    unsafe {
        if ev.is_null() {
            task.run_sync()
        } else {
            event::launch(ev, task)
        }
    }
}

/// Reports `rc` (an immediate result, e.g. a validation error) the way the API does.
unsafe fn finish(ev: *mut daos_event_t, rc: c_int) -> c_int {
    // SAFETY: the caller keeps this function's `# Safety` contract, which is all the operations
    // below need.
    unsafe {
        if ev.is_null() {
            rc
        } else {
            event::launch(ev, Task::new(false, None, Box::new(move || rc)))
        }
    }
}

/// Raw pointers moved into a task: the caller keeps what they point to alive until completion.
struct Raw<T>(T);
// SAFETY: needed (raw pointers are not Send); the task only touches them while the caller keeps
// them alive, and no other thread touches them meanwhile (the DAOS event contract).
unsafe impl<T> Send for Raw<T> {}

unsafe fn cstr<'a>(p: *const c_char) -> Option<&'a str> {
    // SAFETY: the caller keeps this function's `# Safety` contract, which is all the operations
    // below need.
    unsafe {
        if p.is_null() {
            None
        } else {
            CStr::from_ptr(p).to_str().ok()
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Init

static INIT: Mutex<u32> = Mutex::new(0);

fn initialized() -> bool {
    *INIT.lock() > 0
}

/// The client API version, as libdaos reports it (`int daos_version_get(int *major, int
/// *minor, int *fix)`): DAOS 2.8.0's unless `DAOS_SIM_VERSION` or the control `version M.m.f`
/// (`sim::control`) set another, so that the plugin's and the doctor's refusal of other releases
/// can be tested.
///
/// # Safety
/// Non-null pointers are valid for writes.
#[no_mangle]
pub unsafe extern "C" fn daos_version_get(major: *mut c_int, minor: *mut c_int, fix: *mut c_int) -> c_int {
    if major.is_null() || minor.is_null() || fix.is_null() {
        return -DER_INVAL;
    }
    let [a, b, c] = *sim::VERSION.lock();
    // SAFETY: non-null, valid for writes by this function's contract.
    unsafe {
        *major = a;
        *minor = b;
        *fix = c;
    }
    0
}

#[no_mangle]
pub extern "C" fn daos_init() -> c_int {
    sim::global();
    *INIT.lock() += 1;
    0
}

#[no_mangle]
pub extern "C" fn daos_fini() -> c_int {
    let mut n = INIT.lock();
    if *n == 0 {
        return -DER_UNINIT;
    }
    *n -= 1;
    0
}

// ---------------------------------------------------------------------------------------------
// Pools and containers

/// # Safety
/// C API contract.
#[no_mangle]
pub unsafe extern "C" fn daos_pool_connect2(
    pool: *const c_char,
    sys: *const c_char,
    flags: u32,
    poh: *mut daos_handle_t,
    info: *mut daos_pool_info_t,
    ev: *mut daos_event_t,
) -> c_int {
    // SAFETY: the caller keeps libdaos's contract for this entry point (valid handles, pointers
    // valid for the sizes given, the event alive until reaped), which is all the operations below need.
    unsafe {
        if !initialized() {
            return -DER_UNINIT;
        }
        let Some(name) = cstr(pool) else { return finish(ev, -DER_INVAL) };
        if !sys.is_null() && CStr::from_ptr(sys).to_bytes().len() > DAOS_SYS_NAME_MAX {
            return finish(ev, -DER_INVAL);
        }
        if (flags & (DAOS_PC_RO | DAOS_PC_RW | DAOS_PC_EX)).count_ones() != 1 || poh.is_null() {
            return finish(ev, -DER_INVAL);
        }
        if !store::label_is_valid(name) && store::parse_uuid(name).is_none() {
            return finish(ev, -DER_INVAL);
        }
        let name = name.to_string();
        let out = Raw((poh, info));
        let work: Work = Box::new(move || {
            let out = out;
            let (poh, info) = out.0;
            let delay = sim::CONNECT_DELAY_MS.load(std::sync::atomic::Ordering::Relaxed);
            if delay > 0 {
                sim::CONNECTS_INSIDE.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                std::thread::sleep(std::time::Duration::from_millis(delay));
                sim::CONNECTS_INSIDE.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
            }
            let Some(p) = sim::global().store.find_pool(&name) else {
                tracing::debug!(pool = %name, "pool_connect: no such pool");
                return -DER_NONEXIST;
            };
            let writable = flags & DAOS_PC_RO == 0;
            if sim::DENY_CONNECT.load(Relaxed) || writable && sim::DENY_POOL_WRITE.load(Relaxed) {
                return -DER_NO_PERM;
            }
            let h = handles::insert(Hdl::Pool(Arc::new(PoolH { pool: p, writable, open_conts: Default::default() })));
            {
                *poh = h;
                if !info.is_null() {
                    std::ptr::write_bytes(info, 0, 1);
                }
            }
            0
        });
        submit(ev, Task::new(false, None, work))
    }
}

/// Legacy name of `daos_pool_connect2`.
///
/// # Safety
/// C API contract.
#[no_mangle]
pub unsafe extern "C" fn daos_pool_connect(
    pool: *const c_char,
    sys: *const c_char,
    flags: u32,
    poh: *mut daos_handle_t,
    info: *mut daos_pool_info_t,
    ev: *mut daos_event_t,
) -> c_int {
    // SAFETY: the caller keeps libdaos's contract for this entry point (valid handles, pointers
    // valid for the sizes given, the event alive until reaped), which is all the operations below need.
    unsafe { daos_pool_connect2(pool, sys, flags, poh, info, ev) }
}

/// # Safety
/// C API contract.
#[no_mangle]
pub unsafe extern "C" fn daos_pool_disconnect(poh: daos_handle_t, ev: *mut daos_event_t) -> c_int {
    // SAFETY: the caller keeps libdaos's contract for this entry point (valid handles, pointers
    // valid for the sizes given, the event alive until reaped), which is all the operations below need.
    unsafe {
        if handles::pool(poh).is_none() {
            return finish(ev, -DER_NO_HDL);
        }
        let work: Work = Box::new(move || {
            let mut r = handles::write();
            match r.get(&poh.cookie) {
                Some(Hdl::Pool(p)) => {
                    if p.open_conts.load(Relaxed) > 0 {
                        return -DER_BUSY;
                    }
                }
                _ => return -DER_NO_HDL,
            }
            r.remove(&poh.cookie);
            0
        });
        submit(ev, Task::new(false, None, work))
    }
}

/// Pool space (`DPI_SPACE`): the pool's capacity and free bytes on media 0 (SCM; NVMe reads 0),
/// per target as the total over `SIM_TARGETS`. `ranks` must be NULL (no ranks here).
///
/// # Safety
/// C API contract.
#[no_mangle]
pub unsafe extern "C" fn daos_pool_query(
    poh: daos_handle_t,
    ranks: *mut *mut d_rank_list_t,
    info: *mut daos_pool_info_t,
    _pool_prop: *mut daos_prop_t,
    ev: *mut daos_event_t,
) -> c_int {
    // SAFETY: the caller keeps libdaos's contract for this entry point (valid handles, pointers
    // valid for the sizes given, the event alive until reaped), which is all the operations below need.
    unsafe {
        let Some(p) = handles::pool(poh) else { return finish(ev, -DER_NO_HDL) };
        if !ranks.is_null() {
            return finish(ev, -DER_NOTSUPPORTED);
        }
        let out = Raw(info);
        let work: Work = Box::new(move || {
            let out = out;
            let info = out.0;
            if info.is_null() {
                return 0;
            }
            let bits = (*info).pi_private[PI_BITS];
            let (total, free) = p.pool.space.query();
            std::ptr::write_bytes(info, 0, 1);
            let w = &mut (*info).pi_private;
            // pi_ntargets | pi_nnodes << 32, then pi_ndisabled | pi_map_ver << 32.
            w[PI_NTARGETS] = sim::SIM_TARGETS as u64 | (sim::SIM_ENGINES as u64) << 32;
            w[PI_NDISABLED] = sim::excluded_targets() as u64 | 1 << 32;
            w[PI_BITS] = bits;
            if bits & DPI_SPACE != 0 {
                w[PI_S_TOTAL] = total;
                w[PI_S_FREE] = free;
                let per = |n: u64| n / sim::SIM_TARGETS as u64;
                w[PI_FREE_MIN] = per(free);
                w[PI_FREE_MAX] = per(free);
                w[PI_FREE_MEAN] = per(free);
                w[PI_PS_NTARGETS] = sim::SIM_TARGETS as u64;
            }
            0
        });
        submit(ev, Task::new(false, None, work))
    }
}

/// # Safety
/// C API contract.
#[no_mangle]
pub unsafe extern "C" fn daos_cont_open2(
    poh: daos_handle_t,
    cont: *const c_char,
    flags: u32,
    coh: *mut daos_handle_t,
    info: *mut daos_cont_info_t,
    ev: *mut daos_event_t,
) -> c_int {
    // SAFETY: the caller keeps libdaos's contract for this entry point (valid handles, pointers
    // valid for the sizes given, the event alive until reaped), which is all the operations below need.
    unsafe {
        let Some(p) = handles::pool(poh) else { return finish(ev, -DER_NO_HDL) };
        let Some(name) = cstr(cont) else { return finish(ev, -DER_INVAL) };
        if (flags & (DAOS_COO_RO | DAOS_COO_RW | DAOS_COO_EX)).count_ones() != 1 || coh.is_null() {
            return finish(ev, -DER_INVAL);
        }
        if !store::label_is_valid(name) && store::parse_uuid(name).is_none() {
            return finish(ev, -DER_INVAL);
        }
        let writable = flags & DAOS_COO_RO == 0;
        if writable && (!p.writable || sim::DENY_WRITE.load(Relaxed)) || sim::DENY_OPEN.load(Relaxed) {
            return finish(ev, -DER_NO_PERM);
        }
        let name = name.to_string();
        let out = Raw((coh, info));
        let work: Work = Box::new(move || {
            let out = out;
            let (coh, info) = out.0;
            let Some(c) = p.pool.find_cont(&name) else {
                tracing::debug!(cont = %name, "cont_open: no such container");
                return -DER_NONEXIST;
            };
            let h = handles::insert(Hdl::Cont(Arc::new(ContH { poh: p, cont: c, writable })));
            {
                *coh = h;
                if !info.is_null() {
                    std::ptr::write_bytes(info, 0, 1);
                }
            }
            0
        });
        submit(ev, Task::new(false, None, work))
    }
}

/// Legacy name of `daos_cont_open2`.
///
/// # Safety
/// C API contract.
#[no_mangle]
pub unsafe extern "C" fn daos_cont_open(
    poh: daos_handle_t,
    cont: *const c_char,
    flags: u32,
    coh: *mut daos_handle_t,
    info: *mut daos_cont_info_t,
    ev: *mut daos_event_t,
) -> c_int {
    // SAFETY: the caller keeps libdaos's contract for this entry point (valid handles, pointers
    // valid for the sizes given, the event alive until reaped), which is all the operations below need.
    unsafe { daos_cont_open2(poh, cont, flags, coh, info, ev) }
}

/// # Safety
/// C API contract.
#[no_mangle]
pub unsafe extern "C" fn daos_cont_close(coh: daos_handle_t, ev: *mut daos_event_t) -> c_int {
    // SAFETY: the caller keeps libdaos's contract for this entry point (valid handles, pointers
    // valid for the sizes given, the event alive until reaped), which is all the operations below need.
    unsafe {
        if handles::cont(coh).is_none() {
            return finish(ev, -DER_NO_HDL);
        }
        let work: Work = Box::new(move || {
            let mut r = handles::write();
            let c = match r.get(&coh.cookie) {
                Some(Hdl::Cont(c)) => c.clone(),
                _ => return -DER_NO_HDL,
            };
            // No BUSY for objects still open: a real DAOS 2.8 engine closes the container and a
            // later daos_obj_close of such an object still returns 0 (probed). Pool disconnect
            // does check for open containers (DAOS's dc_pool_disconnect), see below.
            r.remove(&coh.cookie);
            c.poh.open_conts.fetch_sub(1, Relaxed);
            0
        });
        submit(ev, Task::new(false, None, work))
    }
}

/// # Safety
/// C API contract.
#[no_mangle]
pub unsafe extern "C" fn daos_cont_create_with_label(
    poh: daos_handle_t,
    label: *const c_char,
    cont_prop: *mut daos_prop_t,
    uuid: *mut uuid_t,
    ev: *mut daos_event_t,
) -> c_int {
    // SAFETY: the caller keeps libdaos's contract for this entry point (valid handles, pointers
    // valid for the sizes given, the event alive until reaped), which is all the operations below need.
    unsafe {
        let Some(p) = handles::pool(poh) else { return finish(ev, -DER_NO_HDL) };
        let Some(label) = cstr(label).filter(|l| store::label_is_valid(l)) else {
            return finish(ev, -DER_INVAL);
        };
        if !p.writable {
            return finish(ev, -DER_NO_PERM);
        }
        // Read now: only the ACL is recorded (crate::acl); other properties are ignored.
        let acl = match crate::acl::acl_of(cont_prop) {
            Ok(a) => a,
            Err(rc) => return finish(ev, rc),
        };
        let label = label.to_string();
        let out = Raw(uuid);
        let work: Work = Box::new(move || {
            let out = out;
            let mut conts = p.pool.conts.lock();
            if conts.iter().any(|c| c.label == label) {
                return -DER_EXIST;
            }
            let rf = default_rf();
            let c = Arc::new(ContData::new(&label, rf));
            if let Some(acl) = acl {
                *c.acl.lock() = acl;
            }
            if !out.0.is_null() {
                *out.0 = c.uuid;
            }
            conts.push(c);
            tracing::debug!(cont = %label, "container created");
            0
        });
        submit(ev, Task::new(false, None, work))
    }
}

/// Validates the (names, sizes) arrays of an attribute call: n > 0, no NULL array, every name
/// a non-empty string.
unsafe fn attr_names(n: c_int, names: *const *const c_char, sizes: *const usize) -> Option<Vec<String>> {
    // SAFETY: the caller keeps this function's `# Safety` contract, which is all the operations
    // below need.
    unsafe {
        if n <= 0 || names.is_null() || sizes.is_null() {
            return None;
        }
        (0..n as usize).map(|i| cstr(*names.add(i)).filter(|s| !s.is_empty()).map(str::to_string)).collect()
    }
}

/// # Safety
/// C API contract.
#[no_mangle]
pub unsafe extern "C" fn daos_cont_set_attr(
    coh: daos_handle_t,
    n: c_int,
    names: *const *const c_char,
    values: *const *const std::ffi::c_void,
    sizes: *const usize,
    ev: *mut daos_event_t,
) -> c_int {
    // SAFETY: the caller keeps libdaos's contract for this entry point (valid handles, pointers
    // valid for the sizes given, the event alive until reaped), which is all the operations below need.
    unsafe {
        let Some(c) = handles::cont(coh) else { return finish(ev, -DER_NO_HDL) };
        let Some(keys) = attr_names(n, names, sizes) else { return finish(ev, -DER_INVAL) };
        if values.is_null() {
            return finish(ev, -DER_INVAL);
        }
        let mut vals = Vec::with_capacity(keys.len());
        for i in 0..keys.len() {
            let (v, len) = (*values.add(i), *sizes.add(i));
            if v.is_null() || len == 0 {
                return finish(ev, -DER_INVAL);
            }
            vals.push(std::slice::from_raw_parts(v.cast::<u8>(), len).to_vec());
        }
        if !c.writable {
            return finish(ev, -DER_NO_PERM);
        }
        let work: Work = Box::new(move || {
            let mut attrs = c.cont.attrs.lock();
            for (k, v) in keys.into_iter().zip(vals) {
                attrs.insert(k, v);
            }
            0
        });
        submit(ev, Task::new(false, None, work))
    }
}

/// # Safety
/// C API contract.
#[no_mangle]
pub unsafe extern "C" fn daos_cont_get_attr(
    coh: daos_handle_t,
    n: c_int,
    names: *const *const c_char,
    buffers: *const *mut std::ffi::c_void,
    sizes: *mut usize,
    ev: *mut daos_event_t,
) -> c_int {
    // SAFETY: the caller keeps libdaos's contract for this entry point (valid handles, pointers
    // valid for the sizes given, the event alive until reaped), which is all the operations below need.
    unsafe {
        let Some(c) = handles::cont(coh) else { return finish(ev, -DER_NO_HDL) };
        let Some(keys) = attr_names(n, names, sizes) else { return finish(ev, -DER_INVAL) };
        let out = Raw((buffers, sizes));
        let work: Work = Box::new(move || {
            let out = out;
            let (buffers, sizes) = out.0;
            let attrs = c.cont.attrs.lock();
            for (i, k) in keys.iter().enumerate() {
                let Some(v) = attrs.get(k) else { return -DER_NONEXIST };
                {
                    // NULL buffers ask for sizes only; longer values are truncated to the buffer.
                    let buf = if buffers.is_null() { std::ptr::null_mut() } else { *buffers.add(i) };
                    if !buf.is_null() {
                        let n = v.len().min(*sizes.add(i));
                        std::ptr::copy_nonoverlapping(v.as_ptr(), buf.cast::<u8>(), n);
                    }
                    *sizes.add(i) = v.len();
                }
            }
            0
        });
        submit(ev, Task::new(false, None, work))
    }
}

fn default_rf() -> u32 {
    std::env::var("DAOS_SIM_RF").ok().and_then(|v| v.trim().parse::<u32>().ok()).unwrap_or(0).min(2)
}

// ---------------------------------------------------------------------------------------------
// Object classes and ids

struct OClass {
    name: &'static str,
    id: u32,
    /// Failures tolerated.
    rf: u32,
    /// Targets per redundancy group.
    grp_size: u32,
}

static OCLASSES: &[OClass] = &[
    OClass { name: "S1", id: OC_S1, rf: 0, grp_size: 1 },
    OClass { name: "S2", id: OC_S2, rf: 0, grp_size: 1 },
    OClass { name: "SX", id: OC_SX, rf: 0, grp_size: 1 },
    OClass { name: "RP_2G1", id: OC_RP_2G1, rf: 1, grp_size: 2 },
    OClass { name: "RP_2GX", id: OC_RP_2GX, rf: 1, grp_size: 2 },
    OClass { name: "RP_3G1", id: OC_RP_3G1, rf: 2, grp_size: 3 },
    OClass { name: "RP_3GX", id: OC_RP_3GX, rf: 2, grp_size: 3 },
    OClass { name: "EC_2P1G1", id: OC_EC_2P1G1, rf: 1, grp_size: 3 },
    OClass { name: "EC_2P1GX", id: OC_EC_2P1GX, rf: 1, grp_size: 3 },
];

impl OClass {
    /// How many times a write's bytes cross the network: once per replica, (k+p)/k for EC.
    fn write_copies(&self) -> f64 {
        match self.name.split('_').next() {
            Some("RP") => self.grp_size as f64,
            Some("EC") => self.grp_size as f64 / (self.grp_size - self.rf) as f64,
            _ => 1.0,
        }
    }
}

fn oclass_by_redun(redun: u32) -> Option<&'static OClass> {
    OCLASSES.iter().find(|c| c.id >> 24 == redun)
}

/// # Safety
/// `name` must be NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn daos_oclass_name2id(name: *const c_char) -> c_int {
    // SAFETY: the caller keeps libdaos's contract for this entry point (valid handles, pointers
    // valid for the sizes given, the event alive until reaped), which is all the operations below need.
    unsafe {
        let Some(name) = cstr(name) else { return 0 };
        OCLASSES.iter().find(|c| c.name == name).map_or(0, |c| c.id as c_int)
    }
}

/// # Safety
/// C API contract.
#[no_mangle]
pub unsafe extern "C" fn daos_obj_generate_oid2(
    coh: daos_handle_t,
    oid: *mut daos_obj_id_t,
    otype: u32,
    cid: daos_oclass_id_t,
    hints: daos_oclass_hints_t,
    _args: u32,
) -> c_int {
    // SAFETY: the caller keeps libdaos's contract for this entry point (valid handles, pointers
    // valid for the sizes given, the event alive until reaped), which is all the operations below need.
    unsafe {
        let Some(c) = handles::cont(coh) else { return -DER_NO_HDL };
        if oid.is_null() || otype >= DAOS_OT_MAX {
            return -DER_INVAL;
        }
        let class = if cid == OC_UNKNOWN {
            // Redundancy from the container's RF (the redundancy hints are not modelled), the
            // group count from the sharding hint as DAOS's dc_set_oclass picks it.
            let Some(max_groups) = shards_max(otype, hints) else { return -DER_INVAL };
            let id = match (c.cont.rf, max_groups) {
                (0, false) => OC_S1,
                (0, true) => OC_SX,
                (1, false) => OC_RP_2G1,
                (1, true) => OC_RP_2GX,
                (_, false) => OC_RP_3G1,
                (_, true) => OC_RP_3GX,
            };
            OCLASSES.iter().find(|k| k.id == id).expect("listed class")
        } else {
            match OCLASSES.iter().find(|k| k.id == cid) {
                Some(k) => k,
                None => return -DER_INVAL,
            }
        };
        let grp = class.id & 0xFFFF;
        let up = sim::SIM_TARGETS - sim::excluded_targets();
        if grp == 0xFFFF && up < sim::SIM_ENGINES {
            // DAOS 2.8 aborts the process here (reserve_grp_by_rf asserts that at least as
            // many targets are up as there are fault domains); daos-sim fails the call loudly.
            tracing::error!(
                up,
                domains = sim::SIM_ENGINES,
                "daos_obj_generate_oid2: as many groups as possible \
                on a pool with fewer targets up than fault domains: libdaos 2.8 would abort the process"
            );
            return -DER_MISC;
        }
        let grp_nr = if grp == 0xFFFF { (up / class.grp_size).max(1) } else { grp };
        if grp_nr * class.grp_size > sim::SIM_TARGETS {
            return -DER_INVAL;
        }
        let redun = class.id >> 24;
        let o = &mut *oid;
        o.hi = (o.hi & 0xFFFF_FFFF) | ((otype as u64) << 56) | ((redun as u64) << 48) | ((grp_nr as u64) << 32);
        0
    }
}

/// For `OC_UNKNOWN`: whether the sharding hint asks for as many groups as the pool allows
/// (true) or for one (false); None for an invalid hint. As in DAOS: no hint or `SHD_DEF` gives
/// array and flat-KV types the maximum and every other type (`MULTI_HASHED` included) one group;
/// `REG`/`HI`/`EXT` ask for at least 128/256/1024 groups, more than the simulated pool's
/// targets, so they also get the maximum.
fn shards_max(otype: u32, hints: daos_oclass_hints_t) -> Option<bool> {
    match hints & DAOS_OCH_SHD_MASK {
        0 | DAOS_OCH_SHD_DEF => Some(matches!(
            otype,
            DAOS_OT_ARRAY
                | DAOS_OT_ARRAY_ATTR
                | DAOS_OT_ARRAY_BYTE
                | DAOS_OT_KV_HASHED
                | DAOS_OT_KV_UINT64
                | DAOS_OT_KV_LEXICAL
        )),
        DAOS_OCH_SHD_TINY => Some(false),
        DAOS_OCH_SHD_REG | DAOS_OCH_SHD_HI | DAOS_OCH_SHD_EXT | DAOS_OCH_SHD_MAX => Some(true),
        _ => None,
    }
}

/// Legacy name of `daos_obj_generate_oid2`.
///
/// # Safety
/// C API contract.
#[no_mangle]
pub unsafe extern "C" fn daos_obj_generate_oid(
    coh: daos_handle_t,
    oid: *mut daos_obj_id_t,
    otype: u32,
    cid: daos_oclass_id_t,
    hints: daos_oclass_hints_t,
    args: u32,
) -> c_int {
    // SAFETY: the caller keeps libdaos's contract for this entry point (valid handles, pointers
    // valid for the sizes given, the event alive until reaped), which is all the operations below need.
    unsafe { daos_obj_generate_oid2(coh, oid, otype, cid, hints, args) }
}

// ---------------------------------------------------------------------------------------------
// Objects

/// Object open is local in DAOS (no RPC): it takes effect in the call; an event still
/// reports the result when reaped.
///
/// # Safety
/// C API contract.
#[no_mangle]
pub unsafe extern "C" fn daos_obj_open(
    coh: daos_handle_t,
    oid: daos_obj_id_t,
    mode: u32,
    oh: *mut daos_handle_t,
    ev: *mut daos_event_t,
) -> c_int {
    // SAFETY: the caller keeps libdaos's contract for this entry point (valid handles, pointers
    // valid for the sizes given, the event alive until reaped), which is all the operations below need.
    unsafe {
        let rc = obj_open(coh, oid, mode, oh);
        finish(ev, rc)
    }
}

unsafe fn obj_open(coh: daos_handle_t, oid: daos_obj_id_t, mode: u32, oh: *mut daos_handle_t) -> c_int {
    // SAFETY: the caller keeps this function's `# Safety` contract, which is all the operations
    // below need.
    unsafe {
        let Some(c) = handles::cont(coh) else { return -DER_NO_HDL };
        if oh.is_null() || mode & (DAOS_OO_RO | DAOS_OO_RW | DAOS_OO_EXCL) == 0 {
            return -DER_INVAL;
        }
        let writable = mode & (DAOS_OO_RW | DAOS_OO_EXCL) != 0;
        if writable && !c.writable {
            return -DER_NO_PERM;
        }
        let otype = (oid.hi >> 56) as u32;
        let redun = ((oid.hi >> 48) & 0xFF) as u32;
        let grp_nr = ((oid.hi >> 32) & 0xFFFF) as u32;
        let Some(class) = oclass_by_redun(redun) else {
            tracing::warn!(hi = oid.hi, "obj_open: oid carries no known object class (use daos_obj_generate_oid2)");
            return -DER_INVAL;
        };
        if otype >= DAOS_OT_MAX || grp_nr == 0 {
            return -DER_INVAL;
        }
        if class.rf < c.cont.rf {
            tracing::warn!(class = class.name, rf = c.cont.rf, "obj_open: class below container redundancy factor");
            return -DER_INVAL;
        }
        let write_copies = class.write_copies();
        *oh = handles::insert(Hdl::Obj(Arc::new(ObjH { coh: c, oid, writable, otype, write_copies })));
        0
    }
}

/// # Safety
/// C API contract.
#[no_mangle]
pub unsafe extern "C" fn daos_obj_close(oh: daos_handle_t, ev: *mut daos_event_t) -> c_int {
    // SAFETY: the caller keeps libdaos's contract for this entry point (valid handles, pointers
    // valid for the sizes given, the event alive until reaped), which is all the operations below need.
    unsafe {
        let rc = {
            let mut r = handles::write();
            match r.get(&oh.cookie) {
                Some(Hdl::Obj(_)) => {
                    r.remove(&oh.cookie);
                    0
                }
                _ => -DER_NO_HDL,
            }
        };
        finish(ev, rc)
    }
}

/// The transaction of an object call: Ok(None) for `DAOS_TX_NONE`, Err for a handle that is
/// not a transaction, or one on another container.
fn tx_of(th: daos_handle_t, o: &ObjH) -> Result<Option<Arc<crate::tx::TxH>>, c_int> {
    if th.cookie == 0 {
        return Ok(None);
    }
    match handles::tx(th) {
        Some(t) if Arc::ptr_eq(&t.coh.cont, &o.coh.cont) => Ok(Some(t)),
        _ => Err(-DER_NO_HDL),
    }
}

fn tx_ok(th: daos_handle_t) -> bool {
    // Calls that do not take part in transactions accept only DAOS_TX_NONE.
    th.cookie == 0
}

/// # Safety
/// C API contract.
#[no_mangle]
pub unsafe extern "C" fn daos_tx_open(
    coh: daos_handle_t,
    th: *mut daos_handle_t,
    _flags: u64,
    ev: *mut daos_event_t,
) -> c_int {
    // SAFETY: the caller keeps libdaos's contract for this entry point (valid handles, pointers
    // valid for the sizes given, the event alive until reaped), which is all the operations below need.
    unsafe {
        let Some(c) = handles::cont(coh) else { return finish(ev, -DER_NO_HDL) };
        if th.is_null() {
            return finish(ev, -DER_INVAL);
        }
        *th = handles::insert(Hdl::Tx(Arc::new(crate::tx::TxH::new(c))));
        finish(ev, 0)
    }
}

/// # Safety
/// C API contract.
#[no_mangle]
pub unsafe extern "C" fn daos_tx_commit(th: daos_handle_t, ev: *mut daos_event_t) -> c_int {
    // SAFETY: as for daos_tx_open.
    unsafe {
        let Some(t) = handles::tx(th) else { return finish(ev, -DER_NO_HDL) };
        let work: Work = Box::new(move || t.commit());
        submit(ev, obj_task(cost::Op::Other, 0, 0, 1.0, work))
    }
}

/// # Safety
/// C API contract.
#[no_mangle]
pub unsafe extern "C" fn daos_tx_restart(th: daos_handle_t, ev: *mut daos_event_t) -> c_int {
    // SAFETY: as for daos_tx_open.
    unsafe {
        let Some(t) = handles::tx(th) else { return finish(ev, -DER_NO_HDL) };
        t.restart();
        finish(ev, 0)
    }
}

/// # Safety
/// C API contract.
#[no_mangle]
pub unsafe extern "C" fn daos_tx_abort(th: daos_handle_t, ev: *mut daos_event_t) -> c_int {
    // SAFETY: as for daos_tx_open.
    unsafe { daos_tx_restart(th, ev) }
}

/// # Safety
/// C API contract.
#[no_mangle]
pub unsafe extern "C" fn daos_tx_close(th: daos_handle_t, ev: *mut daos_event_t) -> c_int {
    // SAFETY: as for daos_tx_open.
    unsafe {
        let rc = {
            let mut r = handles::write();
            match r.get(&th.cookie) {
                Some(Hdl::Tx(_)) => {
                    r.remove(&th.cookie);
                    0
                }
                _ => -DER_NO_HDL,
            }
        };
        finish(ev, rc)
    }
}

/// Records an object RPC and returns the task that completes it, ready when the cost model
/// says (see `cost`).
fn obj_task(op: cost::Op, recxs: u64, bytes: u64, copies: f64, work: Work) -> Task {
    let ready = cost::ready_at(op, recxs, bytes, copies);
    let work = match sim::take_injected_failure() {
        Some(rc) => {
            tracing::debug!(rc, "injected failure");
            Box::new(move || rc) as Work
        }
        None => work,
    };
    Task::new(true, ready, work)
}

struct RwArgs {
    o: Arc<ObjH>,
    flags: u64,
    dkey: *mut daos_key_t,
    nr: u32,
    iods: *mut daos_iod_t,
    sgls: *mut d_sg_list_t,
}
// SAFETY: needed (raw pointers); the caller keeps every array alive and untouched until the
// event completes, and only the task's thread reads them meanwhile.
unsafe impl Send for RwArgs {}

impl RwArgs {
    unsafe fn update(&self) -> c_int {
        // SAFETY: the caller keeps this function's `# Safety` contract, which is all the operations
        // below need.
        unsafe { io::exec_update(&self.o, self.flags, self.dkey, self.nr, self.iods, self.sgls) }
    }
    unsafe fn fetch(&self) -> c_int {
        // SAFETY: the caller keeps this function's `# Safety` contract, which is all the operations
        // below need.
        unsafe { io::exec_fetch(&self.o, self.flags, self.dkey, self.nr, self.iods, self.sgls) }
    }
}

#[allow(clippy::too_many_arguments)]
unsafe fn obj_rw(
    oh: daos_handle_t,
    th: daos_handle_t,
    flags: u64,
    dkey: *mut daos_key_t,
    nr: u32,
    iods: *mut daos_iod_t,
    sgls: *mut d_sg_list_t,
    ev: *mut daos_event_t,
    update: bool,
) -> c_int {
    // SAFETY: the caller keeps this function's `# Safety` contract, which is all the operations
    // below need.
    unsafe {
        let Some(o) = handles::obj(oh) else { return finish(ev, -DER_NO_HDL) };
        let tx = match tx_of(th, &o) {
            Ok(t) => t,
            Err(rc) => return finish(ev, rc),
        };
        if update && tx.is_some() {
            tracing::warn!("daos-sim: updates inside a transaction are not modelled");
            return finish(ev, -DER_NOTSUPPORTED);
        }
        let checked = match io::check_io(&o, flags, dkey, nr, iods, sgls, update) {
            Ok(c) => c,
            Err(rc) => {
                tracing::debug!(rc, update, "object I/O rejected by validation");
                return finish(ev, rc);
            }
        };
        if update {
            STATS.update.fetch_add(1, Relaxed);
        } else {
            STATS.fetch.fetch_add(1, Relaxed);
        }
        STATS.iods.fetch_add(nr as u64, Relaxed);
        STATS.recxs.fetch_add(checked.recxs, Relaxed);
        tracing::trace!(
            op = if update { "update" } else { "fetch" },
            oh = oh.cookie,
            nr,
            recxs = checked.recxs,
            bytes = checked.bytes,
            sync = ev.is_null(),
            "object RPC"
        );
        let op = if update { cost::Op::Update } else { cost::Op::Fetch };
        let copies = o.write_copies;
        let a = RwArgs { o, flags, dkey, nr, iods, sgls };
        let work: Work = match tx {
            Some(t) => Box::new(move || {
                // Recorded before the fetch: an update landing between the two leaves the fetch
                // newer than what was recorded, so the commit sees a change (a conflict), never
                // the other way round.
                if let Ok(dk) = io::key(a.dkey, a.o.dkey_u64()) {
                    t.read(&a.o, dk);
                }
                a.fetch()
            }),
            None if update => Box::new(move || a.update()),
            None => Box::new(move || a.fetch()),
        };
        submit(ev, obj_task(op, checked.recxs, checked.bytes, copies, work))
    }
}

/// # Safety
/// C API contract: descriptors and buffers stay valid until completion.
#[no_mangle]
pub unsafe extern "C" fn daos_obj_update(
    oh: daos_handle_t,
    th: daos_handle_t,
    flags: u64,
    dkey: *mut daos_key_t,
    nr: u32,
    iods: *mut daos_iod_t,
    sgls: *mut d_sg_list_t,
    ev: *mut daos_event_t,
) -> c_int {
    // SAFETY: the caller keeps libdaos's contract for this entry point (valid handles, pointers
    // valid for the sizes given, the event alive until reaped), which is all the operations below need.
    unsafe { obj_rw(oh, th, flags, dkey, nr, iods, sgls, ev, true) }
}

/// # Safety
/// C API contract: descriptors and buffers stay valid until completion.
#[no_mangle]
pub unsafe extern "C" fn daos_obj_fetch(
    oh: daos_handle_t,
    th: daos_handle_t,
    flags: u64,
    dkey: *mut daos_key_t,
    nr: u32,
    iods: *mut daos_iod_t,
    sgls: *mut d_sg_list_t,
    _ioms: *mut daos_iom_t,
    ev: *mut daos_event_t,
) -> c_int {
    // SAFETY: the caller keeps libdaos's contract for this entry point (valid handles, pointers
    // valid for the sizes given, the event alive until reaped), which is all the operations below need.
    unsafe { obj_rw(oh, th, flags, dkey, nr, iods, sgls, ev, false) }
}

struct PunchArgs {
    o: Arc<ObjH>,
    flags: u64,
    what: PunchWhat,
    dkey: *const daos_key_t,
    akeys: *const daos_key_t,
}
// SAFETY: as for RwArgs: the keys outlive the event, and only the task reads them.
unsafe impl Send for PunchArgs {}

impl PunchArgs {
    unsafe fn run(&self) -> c_int {
        // SAFETY: the caller keeps this function's `# Safety` contract, which is all the operations
        // below need.
        unsafe { io::exec_punch(&self.o, self.flags, &self.what, self.dkey, self.akeys) }
    }
}

unsafe fn punch(
    oh: daos_handle_t,
    th: daos_handle_t,
    flags: u64,
    what: PunchWhat,
    dkey: *const daos_key_t,
    akeys: *const daos_key_t,
    ev: *mut daos_event_t,
) -> c_int {
    // SAFETY: the caller keeps this function's `# Safety` contract, which is all the operations
    // below need.
    unsafe {
        let Some(o) = handles::obj(oh) else { return finish(ev, -DER_NO_HDL) };
        let tx = match tx_of(th, &o) {
            Ok(t) => t,
            Err(rc) => return finish(ev, rc),
        };
        if let Err(rc) = io::check_punch(&o, &what, dkey, akeys) {
            return finish(ev, rc);
        }
        STATS.punch.fetch_add(1, Relaxed);
        if let Some(t) = tx {
            // Held back until the commit (only dkey punches are modelled in a transaction).
            let PunchWhat::Dkey = what else { return finish(ev, -DER_NOTSUPPORTED) };
            let Ok(dk) = io::key(dkey, o.dkey_u64()) else { return finish(ev, -DER_INVAL) };
            let dk = dk.to_vec();
            let work: Work = Box::new(move || t.punch(&o, &dk));
            return submit(ev, obj_task(cost::Op::Other, 0, 0, 1.0, work));
        }
        let a = PunchArgs { o, flags, what, dkey, akeys };
        submit(ev, obj_task(cost::Op::Other, 0, 0, 1.0, Box::new(move || a.run())))
    }
}

/// # Safety
/// C API contract.
#[no_mangle]
pub unsafe extern "C" fn daos_obj_punch(
    oh: daos_handle_t,
    th: daos_handle_t,
    flags: u64,
    ev: *mut daos_event_t,
) -> c_int {
    // SAFETY: the caller keeps libdaos's contract for this entry point (valid handles, pointers
    // valid for the sizes given, the event alive until reaped), which is all the operations below need.
    unsafe { punch(oh, th, flags, PunchWhat::Obj, std::ptr::null(), std::ptr::null(), ev) }
}

/// As in DAOS, only one dkey per call: `nr != 1` (or NULL dkeys) fails at once with
/// -DER_INVAL, even with an event.
///
/// # Safety
/// C API contract.
#[no_mangle]
pub unsafe extern "C" fn daos_obj_punch_dkeys(
    oh: daos_handle_t,
    th: daos_handle_t,
    flags: u64,
    nr: u32,
    dkeys: *mut daos_key_t,
    ev: *mut daos_event_t,
) -> c_int {
    // SAFETY: the caller keeps libdaos's contract for this entry point (valid handles, pointers
    // valid for the sizes given, the event alive until reaped), which is all the operations below need.
    unsafe {
        if dkeys.is_null() || nr != 1 {
            return -DER_INVAL;
        }
        punch(oh, th, flags, PunchWhat::Dkey, dkeys, std::ptr::null(), ev)
    }
}

/// # Safety
/// C API contract.
#[no_mangle]
pub unsafe extern "C" fn daos_obj_punch_akeys(
    oh: daos_handle_t,
    th: daos_handle_t,
    flags: u64,
    dkey: *mut daos_key_t,
    nr: u32,
    akeys: *mut daos_key_t,
    ev: *mut daos_event_t,
) -> c_int {
    // SAFETY: the caller keeps libdaos's contract for this entry point (valid handles, pointers
    // valid for the sizes given, the event alive until reaped), which is all the operations below need.
    unsafe { punch(oh, th, flags, PunchWhat::Akeys(nr), dkey, akeys, ev) }
}

struct QueryArgs {
    o: Arc<ObjH>,
    flags: u64,
    dkey: *mut daos_key_t,
    akey: *mut daos_key_t,
    recx: *mut daos_recx_t,
}
// SAFETY: as for RwArgs: the keys and recx outlive the event, and only the task writes them.
unsafe impl Send for QueryArgs {}

impl QueryArgs {
    unsafe fn run(&self) -> c_int {
        // SAFETY: the caller keeps this function's `# Safety` contract, which is all the operations
        // below need.
        unsafe { io::exec_query(&self.o, self.flags, self.dkey, self.akey, self.recx) }
    }
}

/// # Safety
/// C API contract.
#[no_mangle]
pub unsafe extern "C" fn daos_obj_query_key(
    oh: daos_handle_t,
    th: daos_handle_t,
    flags: u64,
    dkey: *mut daos_key_t,
    akey: *mut daos_key_t,
    recx: *mut daos_recx_t,
    ev: *mut daos_event_t,
) -> c_int {
    // SAFETY: the caller keeps libdaos's contract for this entry point (valid handles, pointers
    // valid for the sizes given, the event alive until reaped), which is all the operations below need.
    unsafe {
        io::reset_query_recx(recx);
        let Some(o) = handles::obj(oh) else { return finish(ev, -DER_NO_HDL) };
        if !tx_ok(th) {
            return finish(ev, -DER_NO_HDL);
        }
        if let Err(rc) = io::check_query(&o, flags, dkey, akey, recx) {
            return finish(ev, rc);
        }
        io::reset_query_dkey(flags, dkey);
        STATS.query.fetch_add(1, Relaxed);
        let a = QueryArgs { o, flags, dkey, akey, recx };
        submit(ev, obj_task(cost::Op::Other, 0, 0, 1.0, Box::new(move || a.run())))
    }
}

// ---------------------------------------------------------------------------------------------
// Event queues and events

/// # Safety
/// C API contract.
#[no_mangle]
pub unsafe extern "C" fn daos_eq_create(eqh: *mut daos_handle_t) -> c_int {
    // SAFETY: the caller keeps libdaos's contract for this entry point (valid handles, pointers
    // valid for the sizes given, the event alive until reaped), which is all the operations below need.
    unsafe {
        if eqh.is_null() {
            return -DER_INVAL;
        }
        if !initialized() {
            return -DER_UNINIT;
        }
        *eqh = handles::insert(Hdl::Eq(Eq::new()));
        0
    }
}

#[no_mangle]
pub extern "C" fn daos_eq_destroy(eqh: daos_handle_t, flags: c_int) -> c_int {
    let Some(eq) = handles::eq(eqh) else { return -DER_NONEXIST };
    let rc = event::eq_destroy(&eq, flags & DAOS_EQ_DESTROY_FORCE != 0);
    if rc == 0 {
        handles::write().remove(&eqh.cookie);
    }
    rc
}

/// # Safety
/// C API contract: `events` has room for `nevents` pointers.
#[no_mangle]
pub unsafe extern "C" fn daos_eq_poll(
    eqh: daos_handle_t,
    wait_running: c_int,
    timeout: i64,
    nevents: u32,
    events: *mut *mut daos_event_t,
) -> c_int {
    // SAFETY: the caller keeps libdaos's contract for this entry point (valid handles, pointers
    // valid for the sizes given, the event alive until reaped), which is all the operations below need.
    unsafe {
        if nevents == 0 || events.is_null() {
            return -DER_INVAL;
        }
        let Some(eq) = handles::eq(eqh) else { return -DER_NONEXIST };
        let out = std::slice::from_raw_parts_mut(events, nevents as usize);
        event::eq_poll(&eq, wait_running != 0, timeout, out)
    }
}

/// Parent events are not modelled: a non-NULL `parent` returns -DER_NOSYS.
///
/// # Safety
/// C API contract.
#[no_mangle]
pub unsafe extern "C" fn daos_event_init(
    ev: *mut daos_event_t,
    eqh: daos_handle_t,
    parent: *mut daos_event_t,
) -> c_int {
    // SAFETY: the caller keeps libdaos's contract for this entry point (valid handles, pointers
    // valid for the sizes given, the event alive until reaped), which is all the operations below need.
    unsafe {
        if ev.is_null() {
            return -DER_INVAL;
        }
        if !parent.is_null() {
            tracing::warn!("daos_event_init: parent events are not modelled by daos-sim");
            return -DER_NOSYS;
        }
        let eq = if eqh.cookie == 0 {
            None
        } else {
            match handles::eq(eqh) {
                Some(e) => Some(e),
                None => return -DER_NONEXIST,
            }
        };
        event::event_init(ev, eq);
        0
    }
}

/// # Safety
/// C API contract.
#[no_mangle]
pub unsafe extern "C" fn daos_event_fini(ev: *mut daos_event_t) -> c_int {
    // SAFETY: the caller keeps libdaos's contract for this entry point (valid handles, pointers
    // valid for the sizes given, the event alive until reaped), which is all the operations below need.
    unsafe { event::event_fini(ev) }
}

/// # Safety
/// C API contract.
#[no_mangle]
pub unsafe extern "C" fn daos_event_test(ev: *mut daos_event_t, timeout: i64, flag: *mut bool) -> c_int {
    // SAFETY: the caller keeps libdaos's contract for this entry point (valid handles, pointers
    // valid for the sizes given, the event alive until reaped), which is all the operations below need.
    unsafe {
        if !event::event_is_valid(ev) || flag.is_null() {
            return -DER_INVAL;
        }
        *flag = event::event_test(ev, timeout);
        0
    }
}

/// A no-op, as in DAOS: 0 while the event runs, else -DER_NO_PERM.
///
/// # Safety
/// C API contract.
#[no_mangle]
pub unsafe extern "C" fn daos_event_abort(ev: *mut daos_event_t) -> c_int {
    // SAFETY: the caller keeps libdaos's contract for this entry point (valid handles, pointers
    // valid for the sizes given, the event alive until reaped), which is all the operations below need.
    unsafe {
        if !event::event_is_valid(ev) {
            return -DER_INVAL;
        }
        if event::event_running(ev) {
            0
        } else {
            -DER_NO_PERM
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_cross_the_link_once_per_replica() {
        let copies = |name: &str| OCLASSES.iter().find(|c| c.name == name).map(|c| c.write_copies());
        assert_eq!(copies("S1"), Some(1.0));
        assert_eq!(copies("SX"), Some(1.0));
        assert_eq!(copies("RP_2G1"), Some(2.0));
        assert_eq!(copies("RP_3GX"), Some(3.0));
        assert_eq!(copies("EC_2P1G1"), Some(1.5));
    }
}
