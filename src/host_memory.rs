// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//! The checks of host memory (DRAM) against this process's mappings (`/proc/self/maps`). The
//! plugin copies a write's bytes out of registered DRAM and a read's bytes into it on its own
//! threads, where a bad address is a crash of the whole process; refused up front, it is an
//! error naming the range instead.
//!
//! A registration must be mapped and readable. Read-only memory (model weights mapped from a
//! file, say) is a fine source for WRITEs, so it is registered, and remembered: a READ into it
//! is refused at `prepXfer`, unless the mappings now say it is writable.
//!
//! A range unmapped after its registration is the caller's to avoid (deregister first), as
//! with every NIXL backend.

use parking_lot::Mutex;

use crate::error::Error;

const MAPS: &str = "/proc/self/maps";

/// What a transfer does to the memory: a WRITE reads it, a READ writes it.
#[derive(Clone, Copy, PartialEq)]
enum Access {
    Read,
    Write,
}

/// The DRAM ranges registered while (some of) their pages were read-only, for one engine.
#[derive(Default)]
pub struct HostMemory {
    read_only: Mutex<Vec<(u64, u64)>>,
}

impl HostMemory {
    /// `registerMem` of DRAM: Ok when `[addr, addr + len)` is mapped and readable.
    pub fn register(&self, addr: u64, len: u64) -> Result<(), Error> {
        check(addr, len, Access::Read)?;
        if len > 0 && check(addr, len, Access::Write).is_err() {
            let end = addr + len; // no overflow: checked above
            let mut ro = self.read_only.lock();
            if !ro.contains(&(addr, end)) {
                ro.push((addr, end));
            }
        }
        Ok(())
    }

    /// `prepXfer` of a READ into DRAM: each range must be writable where it lies in memory
    /// registered read-only.
    pub fn check_read_into(&self, ranges: impl Iterator<Item = (u64, u64)>) -> Result<(), Error> {
        let mut ro = self.read_only.lock();
        if ro.is_empty() {
            return Ok(());
        }
        for (addr, len) in ranges {
            let end = addr.saturating_add(len);
            let overlapping: Vec<(u64, u64)> = ro.iter().copied().filter(|&(s, e)| s < end && addr < e).collect();
            for (s, e) in overlapping {
                let (from, to) = (addr.max(s), end.min(e));
                check(from, to - from, Access::Write)?;
                if check(s, e - s, Access::Write).is_ok() {
                    // All of it writable now (remapped since): no longer read-only.
                    ro.retain(|&r| r != (s, e));
                }
            }
        }
        Ok(())
    }
}

/// Ok when `[addr, addr + len)` is mapped with `access`; where `/proc/self/maps` cannot be read
/// (no /proc) the range is taken as given, with a warning.
fn check(addr: u64, len: u64, access: Access) -> Result<(), Error> {
    if len == 0 {
        return Ok(());
    }
    let end = addr.checked_add(len).ok_or_else(|| {
        Error::InvalidArg(format!("DRAM range at {addr:#x} of {len} bytes runs past the end of the address space"))
    })?;
    match std::fs::read(MAPS) {
        Ok(maps) => check_in(&maps, addr, end, access),
        Err(e) => {
            tracing::warn!("{MAPS}: {e}; DRAM range at {addr:#x} of {len} bytes not checked");
            Ok(())
        }
    }
}

/// The check against a copy of `/proc/self/maps` (lines "start-end perms ...", ascending; the
/// rest of a line, a file name, may be any bytes).
fn check_in(maps: &[u8], addr: u64, end: u64, access: Access) -> Result<(), Error> {
    let bad = |what: String| {
        let (verb, need) = match access {
            Access::Read => ("registered", "mapped readable"),
            Access::Write => ("read into", "mapped writable"),
        };
        Error::InvalidArg(format!(
            "DRAM range at {addr:#x} of {} bytes cannot be {verb}: {what}; use memory {need}",
            end - addr
        ))
    };
    let mut at = addr;
    for line in maps.split(|&b| b == b'\n') {
        let Some((start, stop, perms)) = parse(line) else { continue };
        if stop <= at {
            continue;
        }
        if start > at {
            return Err(bad(format!("{at:#x} is not mapped")));
        }
        let allowed = match access {
            Access::Read => perms.first() == Some(&b'r'),
            Access::Write => perms.get(1) == Some(&b'w'),
        };
        if !allowed {
            return Err(bad(format!("{at:#x} is mapped {}", String::from_utf8_lossy(perms))));
        }
        at = stop;
        if at >= end {
            return Ok(());
        }
    }
    Err(bad(format!("{at:#x} is not mapped")))
}

fn parse(line: &[u8]) -> Option<(u64, u64, &[u8])> {
    let mut fields = line.split(|&b| b == b' ').filter(|f| !f.is_empty());
    let range = std::str::from_utf8(fields.next()?).ok()?;
    let (start, stop) = range.split_once('-')?;
    let perms = fields.next()?;
    Some((u64::from_str_radix(start, 16).ok()?, u64::from_str_radix(stop, 16).ok()?, perms))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh anonymous mapping of `pages` pages, unmapped when dropped.
    struct Mapping(*mut libc::c_void, usize);

    const PAGE: usize = 4096;

    impl Mapping {
        fn new(pages: usize) -> Mapping {
            // SAFETY: a fresh anonymous mapping of our own.
            let p = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    pages * PAGE,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                )
            };
            assert_ne!(p, libc::MAP_FAILED);
            Mapping(p, pages * PAGE)
        }
        fn at(&self, page: usize) -> u64 {
            self.0 as u64 + (page * PAGE) as u64
        }
        fn protect(&self, page: usize, prot: i32) {
            // SAFETY: a page of this mapping.
            assert_eq!(unsafe { libc::mprotect(self.at(page) as *mut libc::c_void, PAGE, prot) }, 0);
        }
    }

    impl Drop for Mapping {
        fn drop(&mut self) {
            // SAFETY: the whole mapping made in `new` (munmap of an unmapped part is harmless).
            unsafe { libc::munmap(self.0, self.1) };
        }
    }

    #[test]
    fn a_heap_buffer_registers_and_null_unmapped_or_unreadable_ranges_do_not() {
        let mem = HostMemory::default();
        let v = vec![7u8; 1 << 20];
        mem.register(v.as_ptr() as u64, v.len() as u64).unwrap();
        mem.register(0, 0).unwrap();
        let null = mem.register(0, 4096).unwrap_err().to_string();
        assert!(null.contains("0x0 is not mapped"), "{null}");
        assert!(mem.register(u64::MAX - 10, 100).is_err(), "past the address space");
        let m = Mapping::new(3);
        mem.register(m.at(0), 3 * PAGE as u64).unwrap();
        m.protect(1, libc::PROT_NONE);
        let none = mem.register(m.at(0), 3 * PAGE as u64).unwrap_err().to_string();
        assert!(none.contains("is mapped ---"), "{none}");
        // SAFETY: the last page of the mapping.
        assert_eq!(unsafe { libc::munmap(m.at(2) as *mut libc::c_void, PAGE) }, 0);
        let gone = mem.register(m.at(2), PAGE as u64).unwrap_err().to_string();
        assert!(gone.contains("is not mapped"), "{gone}");
        assert!(mem.read_only.lock().is_empty(), "nothing read-only was registered");
    }

    #[test]
    fn read_only_memory_is_a_source_for_writes_and_refused_as_a_reads_destination() {
        let mem = HostMemory::default();
        let m = Mapping::new(4);
        m.protect(1, libc::PROT_READ);
        mem.register(m.at(0), 4 * PAGE as u64).unwrap();
        mem.check_read_into([(m.at(0), PAGE as u64), (m.at(2), 2 * PAGE as u64)].into_iter()).unwrap();
        let ro = mem.check_read_into([(m.at(1) + 100, 10)].into_iter()).unwrap_err().to_string();
        assert!(ro.contains("cannot be read into") && ro.contains("is mapped r-"), "{ro}");
        // Made writable since: read into, and forgotten.
        m.protect(1, libc::PROT_READ | libc::PROT_WRITE);
        mem.check_read_into([(m.at(1), PAGE as u64)].into_iter()).unwrap();
        assert!(mem.read_only.lock().is_empty());
    }

    #[test]
    fn adjacent_mappings_make_one_range_and_odd_file_names_do_not_matter() {
        let maps = b"1000-2000 rw-p 00000000 00:00 0\n2000-3000 rw-s 00000000 00:05 7 /dev/shm/\xff\xfe\n\
                     4000-5000 r--p 0 0:0 0 /x\n5000-6000 rw-p 0 0:0 0\n";
        check_in(maps, 0x1800, 0x2800, Access::Write).unwrap();
        let gap = check_in(maps, 0x2800, 0x4800, Access::Read).unwrap_err().to_string();
        assert!(gap.contains("0x3000 is not mapped"), "{gap}");
        check_in(maps, 0x4000, 0x6000, Access::Read).unwrap();
        let ro = check_in(maps, 0x4800, 0x5800, Access::Write).unwrap_err().to_string();
        assert!(ro.contains("0x4800 is mapped r--p"), "{ro}");
        let tail = check_in(maps, 0x5800, 0x6800, Access::Read).unwrap_err().to_string();
        assert!(tail.contains("0x6000 is not mapped"), "{tail}");
    }
}
