// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//! The checks of host memory (DRAM) against this process's mappings (`/proc/self/maps`). The
//! plugin copies a write's bytes out of registered DRAM and a read's bytes into it on its own
//! threads, where a bad address is a crash of the whole process; refused up front, it is an
//! error naming the range instead.
//!
//! A registration must be mapped and readable. Read-only memory (model weights mapped from a
//! file, say) is a fine source for WRITEs, so it is registered, and remembered: a READ into it
//! is refused at `prepXfer`, unless the mappings now say it is writable. Memory registered
//! writable and made read-only afterwards is the caller's to avoid, as unmapping it is.
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
        let Some(end) = range_end(addr, len)? else { return Ok(()) };
        let Some(maps) = read_maps() else { return Ok(()) };
        check_in(&maps, addr, end, Access::Read)?;
        if check_in(&maps, addr, end, Access::Write).is_err() {
            let mut ro = self.read_only.lock();
            if !ro.contains(&(addr, end)) {
                ro.push((addr, end));
            }
        }
        Ok(())
    }

    /// `prepXfer` of a READ into DRAM: each range must be writable, now, where it lies in
    /// memory registered read-only. Entries stay: memory made writable may be made read-only
    /// again, and DRAM deregistration is not seen by the plugin. One read of the mappings per
    /// call, outside the lock.
    pub fn check_read_into(&self, ranges: impl Iterator<Item = (u64, u64)>) -> Result<(), Error> {
        let ro: Vec<(u64, u64)> = self.read_only.lock().clone();
        if ro.is_empty() {
            return Ok(());
        }
        let mut maps: Option<Option<Vec<u8>>> = None;
        for (addr, len) in ranges {
            let end = addr.saturating_add(len);
            for &(s, e) in ro.iter().filter(|&&(s, e)| s < end && addr < e) {
                let (from, to) = (addr.max(s), end.min(e));
                if let Some(m) = maps.get_or_insert_with(read_maps) {
                    check_in(m, from, to, Access::Write)?;
                }
            }
        }
        Ok(())
    }
}

/// The end of `[addr, addr + len)`, None for an empty range.
fn range_end(addr: u64, len: u64) -> Result<Option<u64>, Error> {
    if len == 0 {
        return Ok(None);
    }
    addr.checked_add(len).map(Some).ok_or_else(|| {
        Error::InvalidArg(format!("DRAM range at {addr:#x} of {len} bytes runs past the end of the address space"))
    })
}

/// This process's mappings; None where `/proc/self/maps` cannot be read (no /proc): ranges are
/// then taken as given, with one warning per process.
fn read_maps() -> Option<Vec<u8>> {
    static WARNED: std::sync::Once = std::sync::Once::new();
    match std::fs::read(MAPS) {
        Ok(maps) => Some(maps),
        Err(e) => {
            WARNED.call_once(|| tracing::warn!("{MAPS}: {e}; DRAM ranges are not checked against the mappings"));
            None
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
        // Made writable since: read into; read-only again: refused again.
        m.protect(1, libc::PROT_READ | libc::PROT_WRITE);
        mem.check_read_into([(m.at(1), PAGE as u64)].into_iter()).unwrap();
        m.protect(1, libc::PROT_READ);
        assert!(mem.check_read_into([(m.at(1), PAGE as u64)].into_iter()).is_err());
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
