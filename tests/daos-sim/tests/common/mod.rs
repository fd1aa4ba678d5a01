// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//! Helpers shared by the daos-sim integration tests: they call the exported C API through the
//! rlib, exactly as C code would.
// These tests drive the simulator's C API as libdaos's callers do: every unsafe block passes
// locals that outlive the call (or the event's completion, which each test waits for), so the
// blocks carry no SAFETY line each.
#![allow(clippy::undocumented_unsafe_blocks)]
#![allow(dead_code)]

use std::os::raw::c_int;
use std::ptr::{null, null_mut};

pub use daos_sim::*;

pub fn cs(s: &str) -> std::ffi::CString {
    std::ffi::CString::new(s).unwrap()
}

pub struct Cont {
    pub poh: daos_handle_t,
    pub coh: daos_handle_t,
}

/// daos_init, connect to pool "sim", create (if needed) and open container `label`.
pub fn setup(label: &str) -> Cont {
    assert_eq!(daos_init(), 0);
    unsafe {
        let mut poh = DAOS_HDL_INVAL;
        let rc = daos_pool_connect2(cs("sim").as_ptr(), null(), DAOS_PC_RW, &mut poh, null_mut(), null_mut());
        assert_eq!(rc, 0, "pool connect");
        assert_ne!(poh.cookie, 0);
        let rc = daos_cont_create_with_label(poh, cs(label).as_ptr(), null_mut(), null_mut(), null_mut());
        assert!(rc == 0 || rc == -DER_EXIST, "cont create {rc}");
        let mut coh = DAOS_HDL_INVAL;
        let rc = daos_cont_open2(poh, cs(label).as_ptr(), DAOS_COO_RW, &mut coh, null_mut(), null_mut());
        assert_eq!(rc, 0, "cont open");
        Cont { poh, coh }
    }
}

impl Cont {
    pub fn oid(&self, lo: u64, otype: u32, class: u32) -> daos_obj_id_t {
        let mut oid = daos_obj_id_t { lo, hi: 0 };
        let rc = unsafe { daos_obj_generate_oid2(self.coh, &mut oid, otype, class, 0, 0) };
        assert_eq!(rc, 0);
        oid
    }

    /// Opens a fresh DAOS_OT_MULTI_HASHED S1 object, RW.
    pub fn obj(&self, lo: u64) -> daos_handle_t {
        self.open(self.oid(lo, DAOS_OT_MULTI_HASHED, OC_S1), DAOS_OO_RW)
    }

    pub fn open(&self, oid: daos_obj_id_t, mode: u32) -> daos_handle_t {
        let mut oh = DAOS_HDL_INVAL;
        let rc = unsafe { daos_obj_open(self.coh, oid, mode, &mut oh, null_mut()) };
        assert_eq!(rc, 0, "obj open");
        oh
    }

    pub fn close(self, objs: &[daos_handle_t]) {
        unsafe {
            for &oh in objs {
                assert_eq!(daos_obj_close(oh, null_mut()), 0);
            }
            assert_eq!(daos_cont_close(self.coh, null_mut()), 0);
            assert_eq!(daos_pool_disconnect(self.poh, null_mut()), 0);
        }
        assert_eq!(daos_fini(), 0);
    }
}

pub fn key(s: &[u8]) -> d_iov_t {
    d_iov_t::from_slice(s)
}

pub fn array_iod(akey: &[u8], size: u64, recxs: &mut [daos_recx_t]) -> daos_iod_t {
    daos_iod_t {
        iod_name: key(akey),
        iod_type: DAOS_IOD_ARRAY,
        iod_size: size,
        iod_flags: 0,
        iod_nr: recxs.len() as u32,
        iod_recxs: if recxs.is_empty() { null_mut() } else { recxs.as_mut_ptr() },
    }
}

pub fn single_iod(akey: &[u8], size: u64) -> daos_iod_t {
    daos_iod_t {
        iod_name: key(akey),
        iod_type: DAOS_IOD_SINGLE,
        iod_size: size,
        iod_flags: 0,
        iod_nr: 1,
        iod_recxs: null_mut(),
    }
}

pub fn sgl(iovs: &mut [d_iov_t]) -> d_sg_list_t {
    d_sg_list_t { sg_nr: iovs.len() as u32, sg_nr_out: 0, sg_iovs: iovs.as_mut_ptr() }
}

pub fn recx(idx: u64, nr: u64) -> daos_recx_t {
    daos_recx_t { rx_idx: idx, rx_nr: nr }
}

/// Synchronous byte-array write of `data` at record `idx`.
pub fn put(oh: daos_handle_t, dkey: &[u8], akey: &[u8], idx: u64, data: &[u8]) -> c_int {
    let mut dk = key(dkey);
    let mut rx = [recx(idx, data.len() as u64)];
    let mut iod = array_iod(akey, 1, &mut rx);
    let mut iov = [d_iov_t::from_slice(data)];
    let mut sg = sgl(&mut iov);
    unsafe { daos_obj_update(oh, DAOS_TX_NONE, 0, &mut dk, 1, &mut iod, &mut sg, null_mut()) }
}

pub struct Got {
    pub rc: c_int,
    pub iod_size: u64,
    pub sg_nr_out: u32,
    pub iov_len: usize,
}

/// Synchronous byte-array read into `buf` of records [idx, idx+buf.len()).
pub fn get(oh: daos_handle_t, dkey: &[u8], akey: &[u8], idx: u64, buf: &mut [u8]) -> Got {
    let mut dk = key(dkey);
    let mut rx = [recx(idx, buf.len() as u64)];
    let mut iod = array_iod(akey, 1, &mut rx);
    let mut iov = [d_iov_t::from_mut(buf)];
    let mut sg = sgl(&mut iov);
    let rc = unsafe { daos_obj_fetch(oh, DAOS_TX_NONE, 0, &mut dk, 1, &mut iod, &mut sg, null_mut(), null_mut()) };
    Got { rc, iod_size: iod.iod_size, sg_nr_out: sg.sg_nr_out, iov_len: iov[0].iov_len }
}

pub fn eq_create() -> daos_handle_t {
    let mut eqh = DAOS_HDL_INVAL;
    assert_eq!(unsafe { daos_eq_create(&mut eqh) }, 0);
    eqh
}

pub fn event(eqh: daos_handle_t) -> Box<daos_event_t> {
    let mut ev = Box::<daos_event_t>::default();
    assert_eq!(unsafe { daos_event_init(&mut *ev, eqh, null_mut()) }, 0);
    ev
}

/// Polls one event with a timeout in µs; NULL if none.
pub fn poll1(eqh: daos_handle_t, timeout_us: i64) -> *mut daos_event_t {
    let mut out = [null_mut::<daos_event_t>(); 1];
    let rc = unsafe { daos_eq_poll(eqh, 0, timeout_us, 1, out.as_mut_ptr()) };
    assert!(rc >= 0, "eq_poll {rc}");
    if rc == 1 {
        out[0]
    } else {
        null_mut()
    }
}

/// Extracts a counter from daos_sim_stats().
pub fn stat(name: &str) -> u64 {
    let s = unsafe { std::ffi::CStr::from_ptr(daos_sim_stats()) }.to_str().unwrap().to_string();
    let pat = format!("\"{name}\":");
    let at = s.find(&pat).unwrap_or_else(|| panic!("{name} not in {s}")) + pat.len();
    s[at..].split(|c: char| !c.is_ascii_digit()).next().unwrap().parse().unwrap()
}

pub fn control(cmd: &str) -> c_int {
    unsafe { daos_sim_control(cs(cmd).as_ptr()) }
}
