// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//! Container ACLs: `daos_prop_alloc`/`daos_prop_free`, `daos_acl_from_strs`, and what
//! `daos_cont_create_with_label` records of a `DAOS_PROP_CO_ACL` entry, which
//! `daos_sim_cont_acl` hands to tests. The simulator has no users, so it records ACLs and
//! enforces none (`deny connect|open` in `sim::control` stands in for a refusal).
//!
//! The ACL is the simulator's own (a boxed list of entry strings behind the opaque
//! `struct daos_acl *`); only the entry syntax is DAOS's: `TYPE:FLAGS:PRINCIPAL:PERMS`.

use std::cell::RefCell;
use std::ffi::{CStr, CString};
use std::os::raw::{c_char, c_int, c_void};

use crate::ffi::*;

/// What DAOS gives a container created without an ACL property (`daos_acl_cont_default`).
pub const DEFAULT_CONT_ACL: [&str; 2] = ["A::OWNER@:rwdtTaAo", "A:G:GROUP@:rwtT"];

/// The simulator's `struct daos_acl`.
struct Acl(Vec<String>);

/// The order DAOS keeps an ACL's entries in: owner, users, owner group, groups, everyone.
fn principal_rank(principal: &str, group: bool) -> u8 {
    match principal {
        "OWNER@" => 0,
        "GROUP@" => 2,
        "EVERYONE@" => 4,
        _ if group => 3,
        _ => 1,
    }
}

/// Parses one ACE string as DAOS's `daos_ace_from_str` accepts it; (principal, group flag).
fn parse_ace(s: &str) -> Option<(String, bool)> {
    let f: Vec<&str> = s.split(':').collect();
    let [ty, flags, principal, perms] = f.as_slice() else { return None };
    if ty.len() != 1 || !"ALU".contains(*ty) {
        return None;
    }
    if !flags.chars().all(|c| "GSF".contains(c)) {
        return None;
    }
    let group = flags.contains('G');
    let special = matches!(*principal, "OWNER@" | "GROUP@" | "EVERYONE@");
    let at = principal.find('@')?;
    if at == 0 || (special && group != (*principal == "GROUP@")) {
        return None;
    }
    if perms.is_empty() || !perms.chars().all(|c| "rwcdtTaAo".contains(c)) {
        return None;
    }
    Some((principal.to_string(), group))
}

/// # Safety
/// C API contract.
#[no_mangle]
pub unsafe extern "C" fn daos_prop_alloc(entries_nr: u32) -> *mut daos_prop_t {
    if entries_nr > DAOS_PROP_ENTRIES_MAX_NR {
        return std::ptr::null_mut();
    }
    let zero = daos_prop_entry { dpe_type: 0, dpe_flags: 0, dpe_reserv: 0, dpe_val_ptr: std::ptr::null_mut() };
    let entries = match entries_nr {
        0 => std::ptr::null_mut(),
        n => Box::into_raw(vec![zero; n as usize].into_boxed_slice()).cast::<daos_prop_entry>(),
    };
    Box::into_raw(Box::new(daos_prop_t { dpp_nr: entries_nr, dpp_reserv: 0, dpp_entries: entries }))
}

/// # Safety
/// `prop` is NULL or from `daos_prop_alloc`, freed once.
#[no_mangle]
pub unsafe extern "C" fn daos_prop_free(prop: *mut daos_prop_t) {
    if prop.is_null() {
        return;
    }
    // SAFETY: `prop` and its entries come from daos_prop_alloc (this function's contract), an
    // ACL value from daos_acl_from_strs.
    unsafe {
        let prop = Box::from_raw(prop);
        if !prop.dpp_entries.is_null() {
            let entries = Box::from_raw(std::ptr::slice_from_raw_parts_mut(prop.dpp_entries, prop.dpp_nr as usize));
            for e in entries.iter() {
                if e.dpe_type == DAOS_PROP_CO_ACL && !e.dpe_val_ptr.is_null() {
                    drop(Box::from_raw(e.dpe_val_ptr.cast::<Acl>()));
                }
            }
        }
    }
}

/// # Safety
/// C API contract: `ace_strs` holds `ace_nr` NUL-terminated strings; `acl` is writable.
#[no_mangle]
pub unsafe extern "C" fn daos_acl_from_strs(
    ace_strs: *const *const c_char,
    ace_nr: usize,
    acl: *mut *mut c_void,
) -> c_int {
    // SAFETY: as this function's contract.
    unsafe {
        if ace_strs.is_null() || ace_nr == 0 || acl.is_null() {
            return -DER_INVAL;
        }
        let mut aces: Vec<(u8, String, String)> = Vec::with_capacity(ace_nr);
        for i in 0..ace_nr {
            let p = *ace_strs.add(i);
            if p.is_null() {
                return -DER_INVAL;
            }
            let Ok(s) = CStr::from_ptr(p).to_str() else { return -DER_INVAL };
            let Some((principal, group)) = parse_ace(s) else {
                tracing::debug!(ace = s, "daos_acl_from_strs: invalid entry");
                return -DER_INVAL;
            };
            let ty = &s[..1];
            if aces.iter().any(|(_, p, e)| *p == principal && &e[..1] == ty) {
                return -DER_INVAL;
            }
            aces.push((principal_rank(&principal, group), principal, s.to_string()));
        }
        aces.sort_by_key(|a| a.0);
        *acl = Box::into_raw(Box::new(Acl(aces.into_iter().map(|a| a.2).collect()))).cast();
        0
    }
}

/// The ACL a container's creation properties ask for: None without a `DAOS_PROP_CO_ACL` entry
/// (DAOS's default then), Err(-DER_INVAL) for properties DAOS refuses.
///
/// # Safety
/// `prop` is NULL or a valid `daos_prop_t` whose ACL entry (if any) came from `daos_acl_from_strs`.
pub unsafe fn acl_of(prop: *const daos_prop_t) -> Result<Option<Vec<String>>, c_int> {
    if prop.is_null() {
        return Ok(None);
    }
    // SAFETY: as this function's contract.
    unsafe {
        let p = &*prop;
        if p.dpp_nr > DAOS_PROP_ENTRIES_MAX_NR || (p.dpp_nr > 0 && p.dpp_entries.is_null()) {
            return Err(-DER_INVAL);
        }
        let mut acl = None;
        for i in 0..p.dpp_nr as usize {
            let e = &*p.dpp_entries.add(i);
            if e.dpe_type == DAOS_PROP_CO_ACL {
                if e.dpe_val_ptr.is_null() {
                    return Err(-DER_INVAL);
                }
                acl = Some((*e.dpe_val_ptr.cast::<Acl>()).0.clone());
            }
        }
        Ok(acl)
    }
}

/// The ACL of container `cont` of pool `pool`, one entry a line: what it was created with, or
/// DAOS's default. NULL when there is no such container. The string stays valid until the
/// calling thread's next call.
///
/// # Safety
/// `pool` and `cont` are NUL-terminated strings.
#[no_mangle]
pub unsafe extern "C" fn daos_sim_cont_acl(pool: *const c_char, cont: *const c_char) -> *const c_char {
    thread_local! {
        static BUF: RefCell<CString> = RefCell::new(CString::default());
    }
    if pool.is_null() || cont.is_null() {
        return std::ptr::null();
    }
    // SAFETY: NUL-terminated strings (this function's contract).
    let (pool, cont) = unsafe { (CStr::from_ptr(pool).to_string_lossy(), CStr::from_ptr(cont).to_string_lossy()) };
    let Some(c) = crate::sim::global().store.find_pool(&pool).and_then(|p| p.find_cont(&cont)) else {
        return std::ptr::null();
    };
    let acl = c.acl.lock().join("\n");
    crate::sim::hand_out(&BUF, acl)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ace_syntax() {
        for ok in [
            "A::OWNER@:rwdtTaAo",
            "A:G:GROUP@:rwtT",
            "A::alice@:rw",
            "A:G:svc@:r",
            "A::EVERYONE@:r",
            "A::bob@example.com:rwt",
        ] {
            assert!(parse_ace(ok).is_some(), "{ok}");
        }
        for bad in [
            "",
            "A::alice:rw",
            "A::alice@",
            "X::alice@:rw",
            "A::alice@:rwz",
            "A:G:OWNER@:rw",
            "A::GROUP@:r",
            "A:::rw",
            "A::@:rw",
            "A::alice@:",
        ] {
            assert!(parse_ace(bad).is_none(), "{bad}");
        }
    }
}
