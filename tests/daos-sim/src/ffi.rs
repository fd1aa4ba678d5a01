// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//! Rust mirrors of the C types and constants in `include/daos.h` and `include/daos_errno.h`.
//! The layout tests (build.rs `_Static_assert`s and `tests/layout.rs`) keep both sides equal.

#![allow(non_camel_case_types)]

use std::os::raw::{c_int, c_void};

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct daos_handle_t {
    pub cookie: u64,
}

pub const DAOS_HDL_INVAL: daos_handle_t = daos_handle_t { cookie: 0 };
pub const DAOS_TX_NONE: daos_handle_t = DAOS_HDL_INVAL;

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct d_iov_t {
    pub iov_buf: *mut c_void,
    pub iov_buf_len: usize,
    pub iov_len: usize,
}

impl Default for d_iov_t {
    fn default() -> Self {
        d_iov_t { iov_buf: std::ptr::null_mut(), iov_buf_len: 0, iov_len: 0 }
    }
}

impl d_iov_t {
    /// An iov over `buf` with `iov_len == iov_buf_len == buf.len()`.
    pub fn from_slice(buf: &[u8]) -> Self {
        d_iov_t { iov_buf: buf.as_ptr() as *mut c_void, iov_buf_len: buf.len(), iov_len: buf.len() }
    }
    /// An iov over `buf` for a fetch: capacity `buf.len()`, `iov_len` 0.
    pub fn from_mut(buf: &mut [u8]) -> Self {
        d_iov_t { iov_buf: buf.as_mut_ptr() as *mut c_void, iov_buf_len: buf.len(), iov_len: 0 }
    }
}

pub type daos_key_t = d_iov_t;

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct d_sg_list_t {
    pub sg_nr: u32,
    pub sg_nr_out: u32,
    pub sg_iovs: *mut d_iov_t,
}

impl Default for d_sg_list_t {
    fn default() -> Self {
        d_sg_list_t { sg_nr: 0, sg_nr_out: 0, sg_iovs: std::ptr::null_mut() }
    }
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct daos_obj_id_t {
    pub lo: u64,
    pub hi: u64,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct daos_recx_t {
    pub rx_idx: u64,
    pub rx_nr: u64,
}

pub type daos_iod_type_t = c_int;
pub const DAOS_IOD_NONE: daos_iod_type_t = 0;
pub const DAOS_IOD_SINGLE: daos_iod_type_t = 1;
pub const DAOS_IOD_ARRAY: daos_iod_type_t = 2;
pub const DAOS_REC_ANY: u64 = 0;

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct daos_iod_t {
    pub iod_name: daos_key_t,
    pub iod_type: daos_iod_type_t,
    pub iod_size: u64,
    pub iod_flags: u64,
    pub iod_nr: u32,
    pub iod_recxs: *mut daos_recx_t,
}

impl Default for daos_iod_t {
    fn default() -> Self {
        daos_iod_t {
            iod_name: d_iov_t::default(),
            iod_type: DAOS_IOD_NONE,
            iod_size: 0,
            iod_flags: 0,
            iod_nr: 0,
            iod_recxs: std::ptr::null_mut(),
        }
    }
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct daos_iom_t {
    pub iom_type: daos_iod_type_t,
    pub iom_nr: u32,
    pub iom_nr_out: u32,
    pub iom_flags: u32,
    pub iom_size: u64,
    pub iom_recx_lo: daos_recx_t,
    pub iom_recx_hi: daos_recx_t,
    pub iom_recxs: *mut daos_recx_t,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct daos_event_private_t {
    pub space: [u64; 20],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct daos_event_t {
    pub ev_error: c_int,
    pub ev_private: daos_event_private_t,
    pub ev_debug: u64,
}

/// `daos_pool_info_t` as 24 words; the fields daos-sim fills are at these word indices (the
/// header's layout, pinned by c/layout.c): `pi_ntargets` is the low half of word 2 (little
/// endian), `pi_bits` word 5, `s_total[SCM]` word 6, `s_free[SCM]` word 8, the per-target free
/// min/max/mean (SCM) words 10, 12, 14, `ps_ntargets` the low half of word 16.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct daos_pool_info_t {
    pub pi_private: [u64; 24],
}
pub const PI_NTARGETS: usize = 2;
pub const PI_NDISABLED: usize = 3;
pub const PI_BITS: usize = 5;
pub const PI_S_TOTAL: usize = 6;
pub const PI_S_FREE: usize = 8;
pub const PI_FREE_MIN: usize = 10;
pub const PI_FREE_MAX: usize = 12;
pub const PI_FREE_MEAN: usize = 14;
pub const PI_PS_NTARGETS: usize = 16;
pub const DPI_SPACE: u64 = 1;

/// Opaque (`d_rank_list_t`): daos-sim has no ranks.
#[repr(C)]
pub struct d_rank_list_t {
    _private: [u8; 0],
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct daos_cont_info_t {
    pub ci_private: [u64; 6],
}

/// `struct daos_prop_entry`; the value union is 8 bytes (`dpe_val`, `dpe_str`, `dpe_val_ptr`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct daos_prop_entry {
    pub dpe_type: u32,
    pub dpe_flags: u16,
    pub dpe_reserv: u16,
    pub dpe_val_ptr: *mut c_void,
}

#[repr(C)]
#[derive(Debug)]
pub struct daos_prop_t {
    pub dpp_nr: u32,
    pub dpp_reserv: u32,
    pub dpp_entries: *mut daos_prop_entry,
}

/// `DAOS_PROP_CO_ACL` of `enum daos_cont_props` (`DAOS_PROP_CO_MIN` 0x1000 + 10).
pub const DAOS_PROP_CO_ACL: u32 = 0x100A;
/// Most entries of one `daos_prop_t` (`DAOS_PROP_ENTRIES_MAX_NR`).
pub const DAOS_PROP_ENTRIES_MAX_NR: u32 = 128;

pub type uuid_t = [u8; 16];

// enum daos_otype_t
pub const DAOS_OT_MULTI_HASHED: u32 = 0;
pub const DAOS_OT_OIT: u32 = 1;
pub const DAOS_OT_DKEY_UINT64: u32 = 2;
pub const DAOS_OT_AKEY_UINT64: u32 = 3;
pub const DAOS_OT_MULTI_UINT64: u32 = 4;
pub const DAOS_OT_DKEY_LEXICAL: u32 = 5;
pub const DAOS_OT_AKEY_LEXICAL: u32 = 6;
pub const DAOS_OT_MULTI_LEXICAL: u32 = 7;
pub const DAOS_OT_KV_HASHED: u32 = 8;
pub const DAOS_OT_KV_UINT64: u32 = 9;
pub const DAOS_OT_KV_LEXICAL: u32 = 10;
pub const DAOS_OT_ARRAY: u32 = 11;
pub const DAOS_OT_ARRAY_ATTR: u32 = 12;
pub const DAOS_OT_ARRAY_BYTE: u32 = 13;
pub const DAOS_OT_MAX: u32 = 14;

pub type daos_oclass_id_t = u32;
pub type daos_oclass_hints_t = u16;

/// Sharding hints of `daos_obj_generate_oid2` (`daos_obj.h`), bits 4-9 of the hints.
pub const DAOS_OCH_SHD_MASK: u16 = 0x3F << 4;
pub const DAOS_OCH_SHD_DEF: u16 = 1 << 4;
pub const DAOS_OCH_SHD_TINY: u16 = 1 << 5;
pub const DAOS_OCH_SHD_REG: u16 = 1 << 6;
pub const DAOS_OCH_SHD_HI: u16 = 1 << 7;
pub const DAOS_OCH_SHD_EXT: u16 = 1 << 8;
pub const DAOS_OCH_SHD_MAX: u16 = 1 << 9;

pub const OC_UNKNOWN: u32 = 0;
pub const OC_S1: u32 = 0x0100_0001;
pub const OC_S2: u32 = 0x0100_0002;
pub const OC_SX: u32 = 0x0100_FFFF;
pub const OC_RP_2G1: u32 = 0x0800_0001;
pub const OC_RP_2GX: u32 = 0x0800_FFFF;
pub const OC_RP_3G1: u32 = 0x0900_0001;
pub const OC_RP_3GX: u32 = 0x0900_FFFF;
pub const OC_EC_2P1G1: u32 = 0x2000_0001;
pub const OC_EC_2P1GX: u32 = 0x2000_FFFF;

pub const DAOS_PC_RO: u32 = 1 << 0;
pub const DAOS_PC_RW: u32 = 1 << 1;
pub const DAOS_PC_EX: u32 = 1 << 2;
pub const DAOS_COO_RO: u32 = 1 << 0;
pub const DAOS_COO_RW: u32 = 1 << 1;
pub const DAOS_COO_EX: u32 = 1 << 2;
pub const DAOS_OO_RO: u32 = 1 << 1;
pub const DAOS_OO_RW: u32 = 1 << 2;
pub const DAOS_OO_EXCL: u32 = 1 << 3;

pub const DAOS_COND_PUNCH: u64 = 1 << 0;
pub const DAOS_COND_DKEY_INSERT: u64 = 1 << 1;
pub const DAOS_COND_DKEY_UPDATE: u64 = 1 << 2;
pub const DAOS_COND_DKEY_FETCH: u64 = 1 << 3;
pub const DAOS_COND_AKEY_INSERT: u64 = 1 << 4;
pub const DAOS_COND_AKEY_UPDATE: u64 = 1 << 5;
pub const DAOS_COND_AKEY_FETCH: u64 = 1 << 6;
pub const DAOS_COND_PER_AKEY: u64 = 1 << 7;

pub const DAOS_GET_MAX: u64 = 1 << 0;
pub const DAOS_GET_MIN: u64 = 1 << 1;
pub const DAOS_GET_DKEY: u64 = 1 << 2;
pub const DAOS_GET_AKEY: u64 = 1 << 3;
pub const DAOS_GET_RECX: u64 = 1 << 4;

pub const DAOS_EQ_WAIT: i64 = -1;
pub const DAOS_EQ_NOWAIT: i64 = 0;
pub const DAOS_EQ_DESTROY_FORCE: c_int = 1;

pub const DAOS_EVS_READY: u32 = 0;
pub const DAOS_EVS_RUNNING: u32 = 1;
pub const DAOS_EVS_COMPLETED: u32 = 2;
pub const DAOS_EVS_ABORTED: u32 = 3;

pub const DAOS_SYS_NAME_MAX: usize = 15;

// enum daos_errno (positive values; APIs return the negative)
pub const DER_SUCCESS: c_int = 0;
pub const DER_NO_PERM: c_int = 1001;
pub const DER_NO_HDL: c_int = 1002;
pub const DER_INVAL: c_int = 1003;
pub const DER_EXIST: c_int = 1004;
pub const DER_NONEXIST: c_int = 1005;
pub const DER_UNREACH: c_int = 1006;
pub const DER_NOSPACE: c_int = 1007;
pub const DER_ALREADY: c_int = 1008;
pub const DER_NOMEM: c_int = 1009;
pub const DER_NOSYS: c_int = 1010;
pub const DER_TIMEDOUT: c_int = 1011;
pub const DER_BUSY: c_int = 1012;
pub const DER_AGAIN: c_int = 1013;
pub const DER_PROTO: c_int = 1014;
pub const DER_UNINIT: c_int = 1015;
pub const DER_TRUNC: c_int = 1016;
pub const DER_OVERFLOW: c_int = 1017;
pub const DER_CANCELED: c_int = 1018;
pub const DER_OOG: c_int = 1019;
pub const DER_HG: c_int = 1020;
pub const DER_MISC: c_int = 1025;
pub const DER_MISMATCH: c_int = 1031;
pub const DER_EXCLUDED: c_int = 1032;
pub const DER_NOREPLY: c_int = 1033;
pub const DER_DOS: c_int = 1034;
pub const DER_IO: c_int = 2001;
pub const DER_ENOENT: c_int = 2003;
pub const DER_STALE: c_int = 2007;
pub const DER_NOTLEADER: c_int = 2008;
pub const DER_EP_RO: c_int = 2010;
pub const DER_EP_OLD: c_int = 2011;
pub const DER_KEY2BIG: c_int = 2012;
pub const DER_REC2BIG: c_int = 2013;
pub const DER_IO_INVAL: c_int = 2014;
pub const DER_SHUTDOWN: c_int = 2017;
pub const DER_INPROGRESS: c_int = 2018;
pub const DER_CSUM: c_int = 2021;
pub const DER_TX_RESTART: c_int = 2025;
pub const DER_DATA_LOSS: c_int = 2026;
pub const DER_RF: c_int = 2031;
pub const DER_AGENT_COMM: c_int = 2034;
pub const DER_NOTSUPPORTED: c_int = 2037;
pub const DER_NO_SERVICE: c_int = 2039;
pub const DER_NVME_IO: c_int = 2042;
pub const DER_UNKNOWN: c_int = 501000;
