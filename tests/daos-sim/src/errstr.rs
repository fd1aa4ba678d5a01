// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//! `d_errstr` / `d_errdesc`: names and descriptions of DER codes (our own wording).

use std::ffi::CStr;
use std::os::raw::{c_char, c_int};

use crate::ffi::*;

struct Der {
    code: c_int,
    name: &'static CStr,
    desc: &'static CStr,
}

macro_rules! der {
    ($code:expr, $name:literal, $desc:literal) => {
        Der { code: $code, name: $name, desc: $desc }
    };
}

static TABLE: &[Der] = &[
    der!(DER_SUCCESS, c"DER_SUCCESS", c"Success"),
    der!(DER_NO_PERM, c"DER_NO_PERM", c"Operation not permitted"),
    der!(DER_NO_HDL, c"DER_NO_HDL", c"Invalid handle"),
    der!(DER_INVAL, c"DER_INVAL", c"Invalid parameters"),
    der!(DER_EXIST, c"DER_EXIST", c"Entity already exists"),
    der!(DER_NONEXIST, c"DER_NONEXIST", c"The specified entity does not exist"),
    der!(DER_UNREACH, c"DER_UNREACH", c"Unreachable node"),
    der!(DER_NOSPACE, c"DER_NOSPACE", c"No space left on storage target"),
    der!(DER_ALREADY, c"DER_ALREADY", c"Operation already performed"),
    der!(DER_NOMEM, c"DER_NOMEM", c"Out of memory"),
    der!(DER_NOSYS, c"DER_NOSYS", c"Function not implemented"),
    der!(DER_TIMEDOUT, c"DER_TIMEDOUT", c"Time out"),
    der!(DER_BUSY, c"DER_BUSY", c"Device or resource busy"),
    der!(DER_AGAIN, c"DER_AGAIN", c"Try again"),
    der!(DER_PROTO, c"DER_PROTO", c"Incompatible protocol"),
    der!(DER_UNINIT, c"DER_UNINIT", c"Not initialized"),
    der!(DER_TRUNC, c"DER_TRUNC", c"Buffer too short"),
    der!(DER_OVERFLOW, c"DER_OVERFLOW", c"Data too long for defined data type or buffer size"),
    der!(DER_CANCELED, c"DER_CANCELED", c"Operation canceled"),
    der!(DER_OOG, c"DER_OOG", c"Out-Of-Group or member list"),
    der!(DER_HG, c"DER_HG", c"Transport layer mercury error"),
    der!(DER_MISC, c"DER_MISC", c"Miscellaneous error"),
    der!(DER_MISMATCH, c"DER_MISMATCH", c"Mismatch"),
    der!(DER_EXCLUDED, c"DER_EXCLUDED", c"Rank excluded"),
    der!(DER_NOREPLY, c"DER_NOREPLY", c"No reply received"),
    der!(DER_DOS, c"DER_DOS", c"Denial of service"),
    der!(DER_IO, c"DER_IO", c"Generic I/O error"),
    der!(DER_ENOENT, c"DER_ENOENT", c"Entry not found"),
    der!(DER_STALE, c"DER_STALE", c"Stale resource (pool map or similar)"),
    der!(DER_NOTLEADER, c"DER_NOTLEADER", c"Not service leader"),
    der!(DER_EP_RO, c"DER_EP_RO", c"Epoch is read-only"),
    der!(DER_EP_OLD, c"DER_EP_OLD", c"Epoch is too old, all data has been discarded"),
    der!(DER_KEY2BIG, c"DER_KEY2BIG", c"Key is too large"),
    der!(DER_REC2BIG, c"DER_REC2BIG", c"Record is too large"),
    der!(DER_IO_INVAL, c"DER_IO_INVAL", c"I/O buffers do not match the I/O descriptor"),
    der!(DER_SHUTDOWN, c"DER_SHUTDOWN", c"Service is shutting down"),
    der!(DER_INPROGRESS, c"DER_INPROGRESS", c"Operation now in progress"),
    der!(DER_CSUM, c"DER_CSUM", c"Checksum error"),
    der!(DER_TX_RESTART, c"DER_TX_RESTART", c"Transaction should restart"),
    der!(DER_DATA_LOSS, c"DER_DATA_LOSS", c"Data lost or not recoverable"),
    der!(DER_RF, c"DER_RF", c"Redundancy factor exceeded"),
    der!(DER_AGENT_COMM, c"DER_AGENT_COMM", c"Cannot communicate with the DAOS agent"),
    der!(DER_NOTSUPPORTED, c"DER_NOTSUPPORTED", c"Operation not supported"),
    der!(DER_NO_SERVICE, c"DER_NO_SERVICE", c"No service available"),
    der!(DER_NVME_IO, c"DER_NVME_IO", c"NVMe I/O error"),
];

fn lookup(rc: c_int) -> Option<&'static Der> {
    if rc > 0 {
        return None;
    }
    let code = rc.checked_neg()?;
    TABLE.iter().find(|d| d.code == code)
}

/// The (positive) code whose name is `name`, e.g. "DER_INVAL" → 1003.
pub fn code_of(name: &str) -> Option<c_int> {
    TABLE.iter().find(|d| d.name.to_str().ok() == Some(name)).map(|d| d.code)
}

/// Name of a (negative) DER code, e.g. "DER_INVAL"; "DER_UNKNOWN" otherwise.
pub fn errstr(rc: c_int) -> &'static CStr {
    lookup(rc).map_or(c"DER_UNKNOWN", |d| d.name)
}

/// Description of a (negative) DER code.
pub fn errdesc(rc: c_int) -> &'static CStr {
    lookup(rc).map_or(c"Unknown error code", |d| d.desc)
}

#[no_mangle]
pub extern "C" fn d_errstr(rc: c_int) -> *const c_char {
    errstr(rc).as_ptr()
}

#[no_mangle]
pub extern "C" fn d_errdesc(rc: c_int) -> *const c_char {
    errdesc(rc).as_ptr()
}
