// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//! Who may use a container this plugin creates, and what a refusal for rights tells the user.
//!
//! DAOS gives a container created without an ACL `A::OWNER@:rwdtTaAo` and `A:G:GROUP@:rwtT`:
//! every user of the owner's primary group could read and overwrite the cache. The plugin
//! creates its containers with the owner's entry only (`OWNER_ACE`), plus the entries of the
//! backend parameter `cont_acl` (`parse_cont_acl`), as a `DAOS_PROP_CO_ACL` property built by
//! libdaos (`daos_acl_from_strs`, `daos_prop_alloc`, freed with `daos_prop_free`).

use crate::error::Error;

/// The owner's entry of a container the plugin creates: DAOS's own owner entry (all rights).
pub const OWNER_ACE: &str = "A::OWNER@:rwdtTaAo";

/// The rights an entry of a container ACL may grant (DAOS's container permissions: read,
/// write, delete the container, get/set properties, get/set the ACL, set the owner).
const CONT_PERMS: &str = "rwdtTaAo";

/// What `cont_acl` entries look like, for its error messages.
const EXPECTED: &str = "comma-separated DAOS ACL entries A:FLAGS:PRINCIPAL:PERMS, such as A::alice@:rw (user \
     alice) or A:G:svc@:r (group svc): FLAGS empty for a user, OWNER@ or EVERYONE@, G for a group or \
     GROUP@; PERMS letters of rwdtTaAo (r read, w write, d delete, t/T get/set properties, a/A \
     get/set the ACL, o set the owner); empty: the owner alone";

/// The principal an entry names (its third field).
fn principal(ace: &str) -> &str {
    ace.split(':').nth(2).unwrap_or_default()
}

/// Checks one entry; why it is refused.
fn check_ace(ace: &str) -> Result<(), String> {
    let fields: Vec<&str> = ace.split(':').collect();
    let [ty, flags, principal, perms] = fields.as_slice() else {
        return Err(format!("has {} fields separated by ':', not 4", fields.len()));
    };
    if *ty != "A" {
        return Err(format!("has type {ty:?}; only allow entries (A) grant access"));
    }
    let special = matches!(*principal, "OWNER@" | "GROUP@" | "EVERYONE@");
    let Some(at) = principal.find('@') else {
        return Err(format!(
            "names {principal:?}, not a principal ending in @ (alice@, svc@, OWNER@, GROUP@, EVERYONE@)"
        ));
    };
    if at == 0 || principal.len() > 255 || principal.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!("names {principal:?}, not a user or group name followed by @"));
    }
    let group = match *flags {
        "" => false,
        "G" => true,
        f => return Err(format!("has flags {f:?}; the only flag is G (a group)")),
    };
    if special && group != (*principal == "GROUP@") {
        return Err(if group {
            format!("gives {principal} the flag G, which only groups take")
        } else {
            "names GROUP@ without the flag G (A:G:GROUP@:...)".to_string()
        });
    }
    if perms.is_empty() {
        return Err("grants no rights".to_string());
    }
    if let Some(c) = perms.chars().find(|c| !CONT_PERMS.contains(*c)) {
        return Err(format!("grants {c:?}, not a container right (rwdtTaAo)"));
    }
    Ok(())
}

/// The entries of the backend parameter `cont_acl`, checked: each well formed, no principal
/// twice. Empty: none.
pub fn parse_cont_acl(value: &str) -> Result<Vec<String>, Error> {
    let bad = |why: String| Error::Param {
        name: "cont_acl",
        value: value.to_string(),
        expected: format!("{why}; expected {EXPECTED}"),
    };
    let mut aces: Vec<String> = Vec::new();
    for ace in value.split(',').map(str::trim).filter(|a| !a.is_empty()) {
        check_ace(ace).map_err(|why| bad(format!("entry {ace:?} {why}")))?;
        if aces.iter().any(|a| principal(a) == principal(ace)) {
            return Err(bad(format!("entry {ace:?} names {} a second time", principal(ace))));
        }
        aces.push(ace.to_string());
    }
    Ok(aces)
}

/// The ACL a container the plugin creates is given: the owner's entry (unless `extra` has
/// one of its own, which then replaces it), then `extra`.
pub fn creation_acl(extra: &[String]) -> Vec<String> {
    let owner_given = extra.iter().any(|a| principal(a) == "OWNER@");
    let mut acl: Vec<String> = if owner_given { Vec::new() } else { vec![OWNER_ACE.to_string()] };
    acl.extend(extra.iter().cloned());
    acl
}

/// The name and uid this process runs as (its effective uid): whom DAOS checks its ACLs for.
pub fn effective_user() -> (String, u32) {
    let uid = crate::private_file::euid();
    // SAFETY: passwd is a plain C struct of integers and pointers, for which all zeroes is valid.
    let mut pw: libc::passwd = unsafe { std::mem::zeroed() };
    let mut buf = vec![0 as libc::c_char; 16 * 1024];
    let mut out: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: valid out pointers and a buffer of the length given; the strings `pw` points at
    // live in `buf`, read before it is dropped.
    let name = unsafe {
        let rc = libc::getpwuid_r(uid, &mut pw, buf.as_mut_ptr(), buf.len(), &mut out);
        if rc == 0 && !out.is_null() && !pw.pw_name.is_null() {
            Some(std::ffi::CStr::from_ptr(pw.pw_name).to_string_lossy().into_owned())
        } else {
            None
        }
    };
    (name.unwrap_or_else(|| uid.to_string()), uid)
}

/// What to tell a user refused for rights (`DER_NO_PERM`) by `call` on pool `pool` (and
/// container `cont`): whom DAOS refused, and the command that grants the rights.
pub fn no_perm_hint(call: &str, pool: &str, cont: Option<&str>) -> String {
    let (user, uid) = effective_user();
    match cont {
        Some(cont) if call != "daos_cont_create_with_label" => format!(
            "the ACL of container {cont:?} does not let user {user} (uid {uid}) open it (to read or to write); its owner \
             grants that with `daos cont update-acl {pool} {cont} --entry A::{user}@:rw`, or A::{user}@:r to read only \
             (a container this plugin creates admits its owner alone, and the principals of the backend parameter cont_acl)"
        ),
        Some(_) => format!(
            "the ACL of pool {pool:?} does not let user {user} (uid {uid}) create containers; an administrator \
             grants that with `dmg pool update-acl -e A::{user}@:rw {pool}`, or create the container beforehand"
        ),
        None => format!(
            "the ACL of pool {pool:?} does not let user {user} (uid {uid}) connect (to read or to write); an administrator \
             grants that with `dmg pool update-acl -e A::{user}@:rw {pool}`"
        ),
    }
}

/// Why a backend on pool `pool`, container `cont` can only read (`pool_writable`: whether the
/// pool let this user connect read-write), and the command that grants writing.
pub fn read_only_hint(pool: &str, cont: &str, pool_writable: bool) -> String {
    let (user, uid) = effective_user();
    if pool_writable {
        format!(
            "container {cont:?} of pool {pool:?} is open read-only: its ACL does not give user {user} (uid {uid}) the \
             write right (w). Reads are served; writes are refused and nothing is evicted. Its owner grants writing with \
             `daos cont update-acl {pool} {cont} --entry A::{user}@:rw`"
        )
    } else {
        format!(
            "pool {pool:?} lets user {user} (uid {uid}) connect read-only (its ACL does not give it the write right (w)), so \
             container {cont:?} is open read-only. Reads are served; writes are refused and nothing is evicted. An \
             administrator grants writing with `dmg pool update-acl -e A::{user}@:rw {pool}`"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cont_acl_entries() {
        assert_eq!(parse_cont_acl("").unwrap(), Vec::<String>::new());
        assert_eq!(parse_cont_acl(" , ").unwrap(), Vec::<String>::new());
        assert_eq!(
            parse_cont_acl("A::alice@:rw, A:G:svc@:r,A::EVERYONE@:r").unwrap(),
            ["A::alice@:rw", "A:G:svc@:r", "A::EVERYONE@:r"]
        );
        assert_eq!(parse_cont_acl("A:G:GROUP@:rwt,A::bob@example.org:rwdtTaAo").unwrap().len(), 2);
        for (bad, why) in [
            ("A::alice:rw", "not a principal ending in @"),
            ("A::alice@", "not 4"),
            ("A::alice@:rw:x", "has 5 fields"),
            ("L::alice@:rw", "only allow entries"),
            ("A::alice@:rwc", "not a container right"),
            ("A::alice@:", "grants no rights"),
            ("A:X:alice@:r", "the only flag is G"),
            ("A:G:OWNER@:r", "only groups take"),
            ("A::GROUP@:r", "without the flag G"),
            ("A::@:r", "not a user or group name"),
            ("A::alice@:r,A::alice@:w", "a second time"),
        ] {
            let e = parse_cont_acl(&format!("A::ok@:r,{bad}")).unwrap_err().to_string();
            assert!(e.contains("cont_acl=") && e.contains(why) && e.contains("A::alice@:rw (user"), "{bad}: {e}");
            let entry = bad.rsplit(',').next().unwrap();
            assert!(e.contains(&format!("entry {entry:?}")), "{bad}: {e}");
        }
    }

    #[test]
    fn the_owner_alone_by_default() {
        assert_eq!(creation_acl(&[]), [OWNER_ACE]);
        let extra = parse_cont_acl("A::alice@:rw").unwrap();
        assert_eq!(creation_acl(&extra), [OWNER_ACE, "A::alice@:rw"]);
        // An OWNER@ entry of cont_acl replaces the default one.
        let own = parse_cont_acl("A::OWNER@:rwt,A:G:svc@:r").unwrap();
        assert_eq!(creation_acl(&own), ["A::OWNER@:rwt", "A:G:svc@:r"]);
        assert!(!creation_acl(&extra).iter().any(|a| a.contains("GROUP@")));
    }

    #[test]
    fn refusals_name_the_user_and_the_fix() {
        let (user, uid) = effective_user();
        assert!(!user.is_empty());
        let pool = no_perm_hint("daos_pool_connect2", "p1", None);
        assert!(
            pool.contains(&format!("user {user} (uid {uid})"))
                && pool.contains(&format!("`dmg pool update-acl -e A::{user}@:rw p1`")),
            "{pool}"
        );
        let cont = no_perm_hint("daos_cont_open2", "p1", Some("c1"));
        assert!(cont.contains(&format!("`daos cont update-acl p1 c1 --entry A::{user}@:rw`")), "{cont}");
        let create = no_perm_hint("daos_cont_create_with_label", "p1", Some("c1"));
        assert!(create.contains("create containers") && create.contains("dmg pool update-acl"), "{create}");
    }
}
