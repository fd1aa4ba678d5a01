// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//! The check of a DRAM registration: every byte of the range mapped, readable and writable in
//! this process (`/proc/self/maps`). The plugin copies a write's bytes out of registered DRAM
//! and a read's bytes into it on its own threads, where a bad address is a crash of the whole
//! process; refused at registration, it is an error naming the range instead. Read-only
//! memory is refused too, since the same registration may serve reads into it.
//!
//! A range unmapped after its registration is the caller's to avoid (deregister first), as
//! with every NIXL backend.

use crate::error::Error;

const MAPS: &str = "/proc/self/maps";

/// Ok when `[addr, addr + len)` is mapped read-write; where `/proc/self/maps` cannot be read
/// the range is taken as given.
pub fn check_dram(addr: u64, len: u64) -> Result<(), Error> {
    if len == 0 {
        return Ok(());
    }
    let end = addr.checked_add(len).ok_or_else(|| {
        Error::InvalidArg(format!("DRAM range at {addr:#x} of {len} bytes runs past the end of the address space"))
    })?;
    let maps = match std::fs::read_to_string(MAPS) {
        Ok(m) => m,
        Err(e) => {
            tracing::debug!("{MAPS}: {e}; DRAM registration at {addr:#x} not checked");
            return Ok(());
        }
    };
    check_in(&maps, addr, end)
}

/// The check against a copy of `/proc/self/maps` (lines "start-end perms ...", ascending).
fn check_in(maps: &str, addr: u64, end: u64) -> Result<(), Error> {
    let bad = |what: String| {
        Error::InvalidArg(format!(
            "DRAM range at {addr:#x} of {} bytes: {what}; register memory this process has mapped read-write",
            end - addr
        ))
    };
    let mut at = addr;
    for line in maps.lines() {
        let Some((start, stop, perms)) = parse(line) else { continue };
        if stop <= at {
            continue;
        }
        if start > at {
            return Err(bad(format!("{at:#x} is not mapped")));
        }
        if !perms.starts_with("rw") {
            return Err(bad(format!("{at:#x} is mapped {perms}")));
        }
        at = stop;
        if at >= end {
            return Ok(());
        }
    }
    Err(bad(format!("{at:#x} is not mapped")))
}

fn parse(line: &str) -> Option<(u64, u64, &str)> {
    let mut fields = line.split_ascii_whitespace();
    let (start, stop) = fields.next()?.split_once('-')?;
    let perms = fields.next()?;
    Some((u64::from_str_radix(start, 16).ok()?, u64::from_str_radix(stop, 16).ok()?, perms))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_heap_buffer_passes_and_null_unmapped_or_read_only_ranges_do_not() {
        let v = vec![7u8; 1 << 20];
        check_dram(v.as_ptr() as u64, v.len() as u64).unwrap();
        check_dram(0, 0).unwrap();
        let null = check_dram(0, 4096).unwrap_err().to_string();
        assert!(null.contains("0x0 is not mapped"), "{null}");
        assert!(check_dram(u64::MAX - 10, 100).is_err(), "past the address space");
        // SAFETY: a fresh anonymous mapping of our own, unmapped again below.
        unsafe {
            let page = 4096;
            let p = libc::mmap(
                std::ptr::null_mut(),
                3 * page,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            assert_ne!(p, libc::MAP_FAILED);
            let base = p as u64;
            check_dram(base, 3 * page as u64).unwrap();
            assert_eq!(libc::mprotect(p.cast::<u8>().add(page).cast(), page, libc::PROT_READ), 0);
            let ro = check_dram(base, 3 * page as u64).unwrap_err().to_string();
            assert!(ro.contains("is mapped r-"), "{ro}");
            check_dram(base, page as u64).unwrap();
            assert_eq!(libc::munmap(p.cast::<u8>().add(2 * page).cast(), page), 0);
            let gone = check_dram(base + 2 * page as u64, page as u64).unwrap_err().to_string();
            assert!(gone.contains("is not mapped"), "{gone}");
            libc::munmap(p, 2 * page);
        }
    }

    #[test]
    fn adjacent_mappings_make_one_range_and_a_gap_is_named() {
        let maps =
            "1000-2000 rw-p 00000000 00:00 0\n2000-3000 rw-s 00000000 00:05 7 /dev/shm/x\n4000-5000 rw-p 0 0:0 0\n";
        check_in(maps, 0x1800, 0x2800).unwrap();
        let gap = check_in(maps, 0x2800, 0x4800).unwrap_err().to_string();
        assert!(gap.contains("0x3000 is not mapped"), "{gap}");
        let tail = check_in(maps, 0x4800, 0x5800).unwrap_err().to_string();
        assert!(tail.contains("0x5000 is not mapped"), "{tail}");
    }
}
