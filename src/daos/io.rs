// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//! One object I/O of one dkey as DAOS sees it, always through a staging buffer of the plugin's
//! (`crate::stage`): the value's bytes (akey `data`, a byte array), the checksums of its blocks
//! and its record (`crate::record`), in one update or one fetch. `IoDesc` owns (or, for the
//! keys, shares) every array DAOS points into; the pointers are set at launch, once the
//! descriptor sits at its final address.
//!
//! The buffer holds the I/O's runs back to back: for an update the union of the caller's
//! ranges, for a fetch that union widened to whole checksum blocks. The caller's memory is
//! touched only by `stage_in` (before an update is sent) and `deliver` (after a fetch
//! verified), both run by `crate::attempt` while the caller still waits for the request.

use std::ptr::addr_of_mut;

use super::{d_iov_t, d_sg_list_t, daos_event_t, daos_iod_t, daos_recx_t};
use super::{iov, sys, Library, Object};
use crate::error::Error;
use crate::key::ObjectKey;
use crate::record::{
    block_pieces, block_span, block_sum, Record, WriteSums, BLOCK, RECORD_BYTES, REC_AKEY, SUMS_AKEY, SUM_BYTES,
};
use crate::stage::Stage;

/// The akey under which a key's bytes live (a byte array: one record per byte).
pub const DATA_AKEY: &[u8] = b"data";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoKind {
    /// Write the ranges, their blocks' checksums and the record (`daos_obj_update`).
    Update,
    /// Read the ranges (whole blocks), their checksums and the record (`daos_obj_fetch`).
    Fetch,
    /// Read the record alone (`daos_obj_fetch`): a key's length, or a read's check of the
    /// key's first dkey.
    Record,
}

/// Where the caller's buffers of an I/O live: host memory (DRAM), copied with memcpy, or
/// memory of one CUDA device (VRAM), copied through the driver.
#[derive(Clone, Copy)]
pub enum Local {
    Host,
    Device(&'static crate::cuda::Device),
}

impl Local {
    fn device(self) -> Option<&'static crate::cuda::Device> {
        match self {
            Local::Host => None,
            Local::Device(d) => Some(d),
        }
    }
}

/// One range of the object and the caller's buffer it moves to or from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extent {
    pub offset: u64,
    pub len: u64,
    pub addr: u64,
}

/// A range of the object held in the staging buffer from `at`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Run {
    offset: u64,
    len: u64,
    at: usize,
}

/// Merges ranges (sorted by offset) that overlap or touch; each run's `at` is where it starts
/// in a buffer holding the runs back to back.
fn runs(mut ranges: Vec<(u64, u64)>) -> Vec<Run> {
    ranges.sort_unstable();
    let mut out: Vec<Run> = Vec::new();
    let mut at = 0usize;
    for (start, end) in ranges {
        match out.last_mut() {
            Some(r) if start <= r.offset + r.len => {
                let grown = end.max(r.offset + r.len) - r.offset;
                at += (grown - r.len) as usize;
                r.len = grown;
            }
            _ => {
                out.push(Run { offset: start, len: end - start, at });
                at += (end - start) as usize;
            }
        }
    }
    out
}

/// The run holding [offset, offset + len) whole (`runs` covers every extent of its I/O).
fn run_of(runs: &[Run], offset: u64, len: u64) -> &Run {
    let i = runs.partition_point(|r| r.offset + r.len <= offset);
    let r = &runs[i];
    debug_assert!(r.offset <= offset && offset + len <= r.offset + r.len);
    r
}

pub struct IoDesc {
    pub kind: IoKind,
    dkey: ObjectKey,
    /// The caller's ranges, by offset; an update's whose ranges overlap in descriptor order
    /// instead (`overlap`: a later one wins), sorted once here rather than at every copy.
    extents: Vec<Extent>,
    /// An update whose ranges overlap (copied whole, in descriptor order).
    overlap: bool,
    /// Where the caller's ranges live.
    local: Local,
    runs: Vec<Run>,
    stage: Option<Stage>,
    stage_len: usize,
    /// An update's record; a fetch's, once DAOS filled `rec_buf`.
    record: Record,
    rec_buf: [u8; RECORD_BYTES],
    /// Blocks whose checksums go with the data: runs of block indices, and the sums themselves
    /// back to back in the same order.
    sum_recxs: Vec<daos_recx_t>,
    sums: Vec<u32>,
    // What DAOS points into, set by `wire`.
    dkey_iov: d_iov_t,
    akey_iovs: [d_iov_t; 3],
    iods: [daos_iod_t; 3],
    niods: u32,
    recxs: Vec<daos_recx_t>,
    data_iov: d_iov_t,
    sums_iov: d_iov_t,
    rec_iov: d_iov_t,
    sgls: [d_sg_list_t; 3],
}

// SAFETY: the raw pointers inside point to memory this struct owns or to caller buffers whose
// lifetime the transfer contract guarantees while its request is live; the struct is handed
// between threads whole.
unsafe impl Send for IoDesc {}

impl IoDesc {
    fn build(kind: IoKind, dkey: ObjectKey, extents: &[Extent], runs: Vec<Run>, record: Record) -> IoDesc {
        let stage_len = runs.iter().map(|r| r.len as usize).sum();
        let mut sorted = extents.to_vec();
        sorted.sort_by_key(|e| e.offset);
        let overlap = kind == IoKind::Update && sorted.windows(2).any(|w| w[0].offset + w[0].len > w[1].offset);
        IoDesc {
            kind,
            dkey,
            extents: if overlap { extents.to_vec() } else { sorted },
            overlap,
            local: Local::Host,
            runs,
            stage: None,
            stage_len,
            record,
            rec_buf: [0; RECORD_BYTES],
            sum_recxs: Vec::new(),
            sums: Vec::new(),
            dkey_iov: iov(std::ptr::null_mut(), 0),
            akey_iovs: [iov(std::ptr::null_mut(), 0); 3],
            iods: [daos_iod_t::default(); 3],
            niods: 0,
            recxs: Vec::new(),
            data_iov: iov(std::ptr::null_mut(), 0),
            sums_iov: iov(std::ptr::null_mut(), 0),
            rec_iov: iov(std::ptr::null_mut(), 0),
            sgls: [d_sg_list_t::default(); 3],
        }
    }

    /// An update of `dkey` storing `extents` (the caller's, in descriptor order) under
    /// `record`. No extents: the record alone (a key's first dkey, when a write puts no bytes
    /// there). Every extent is non-empty and ends within the value (`record.len`), as the
    /// planner's are: a block is summed only where its bytes reach its end or the value's.
    pub fn update(dkey: ObjectKey, extents: &[Extent], record: Record) -> IoDesc {
        debug_assert!(extents.iter().all(|e| e.len > 0 && e.offset + e.len <= record.len), "{extents:?}");
        let runs = runs(extents.iter().map(|e| (e.offset, e.offset + e.len)).collect());
        IoDesc::build(IoKind::Update, dkey, extents, runs, record)
    }

    /// A fetch of `extents` of `dkey`, widened to whole blocks so that each verifies.
    pub fn fetch(dkey: ObjectKey, extents: &[Extent]) -> IoDesc {
        let runs = runs(
            extents
                .iter()
                .map(|e| (e.offset / BLOCK * BLOCK, (e.offset + e.len).div_ceil(BLOCK).saturating_mul(BLOCK)))
                .collect(),
        );
        let mut io = IoDesc::build(IoKind::Fetch, dkey, extents, runs, Record { id: 0, len: 0 });
        for r in &io.runs {
            let (first, n) = (r.offset / BLOCK, r.len / BLOCK);
            io.sum_recxs.push(daos_recx_t { rx_idx: first, rx_nr: n });
        }
        io.sums = vec![0; io.sum_recxs.iter().map(|x| x.rx_nr as usize).sum()];
        io
    }

    /// A fetch of `dkey`'s record alone.
    pub fn record(dkey: ObjectKey) -> IoDesc {
        IoDesc::build(IoKind::Record, dkey, &[], Vec::new(), Record { id: 0, len: 0 })
    }

    /// The I/O with the caller's ranges in `local` memory (host memory unless said).
    pub fn on(mut self, local: Local) -> IoDesc {
        self.local = local;
        self
    }

    /// Bytes of staging buffer this I/O needs (`attach`).
    pub fn stage_len(&self) -> usize {
        self.stage_len
    }

    /// What its staging buffer counts against the pool's cap (0 without one).
    pub fn stage_charge(&self) -> usize {
        self.stage.as_ref().map_or(0, Stage::charge)
    }

    /// Its request ended while DAOS held it: its buffer goes back to the pool's owed allowance.
    pub fn stage_owed(&mut self) {
        if let Some(s) = self.stage.as_mut() {
            s.mark_owed();
        }
    }

    /// Gives its staging buffer back (a write refused for space waits without one: it copies
    /// the caller's bytes in again when it is sent again, while its request is live).
    pub fn detach(&mut self) {
        self.stage = None;
    }

    /// Gives the I/O its staging buffer (of `stage_len` bytes), before launch.
    pub fn attach(&mut self, mut stage: Stage) {
        debug_assert_eq!(stage.as_slice().len(), self.stage_len);
        if let Some(d) = self.local.device() {
            stage.pin(d);
        }
        self.stage = Some(stage);
    }

    /// An update: copies the caller's bytes into the staging buffer and checksums the blocks
    /// they cover whole (up to the value's end); other blocks get no checksum, so a read of
    /// them does not verify. The copy runs in offset order, a piece of a block at a time: each
    /// piece is summed from the caller's memory and then copied into the buffer while it is
    /// still in the cache (streamed, for pieces of 16 KiB and more on x86-64 with AVX2: the
    /// buffer is written without being read), so the caller's bytes are read from memory
    /// once. The sum is the staged bytes' because the caller's do not
    /// change while its request is live; where a caller changes them anyway, a block changed
    /// between its sum and its copy does not verify (a miss). Where descriptors overlap,
    /// all are copied first, in descriptor order, so the later one wins, and then summed from
    /// the buffer; so is device memory, one copy per range. A failed device copy fails the I/O.
    ///
    /// # Safety
    /// The caller's ranges are valid for reads: their request is live, and nothing ends it
    /// before this returns (`Attempt::begin_launch`).
    pub unsafe fn stage_in(&mut self) -> Result<(), Error> {
        let Some(stage) = self.stage.as_mut() else { return Ok(()) };
        let buf = stage.as_mut_slice();
        let mut sums = WriteSums::new(self.record, std::mem::take(&mut self.sums));
        // From the staging buffer, a run at a time (where the bytes were copied there first).
        let sum_staged = |sums: &mut WriteSums, buf: &[u8]| {
            for r in &self.runs {
                for (at, n) in block_pieces(r.offset, r.len) {
                    let from = r.at + (at - r.offset) as usize;
                    sums.piece(at, &buf[from..from + n as usize]);
                }
            }
        };
        if let Some(d) = self.local.device() {
            // One copy per range, in descriptor order (a later one wins where they overlap),
            // all on one stream, done when this returns; then the checksums.
            let base = buf.as_mut_ptr();
            let copies: Vec<crate::cuda::Copy> = self
                .extents
                .iter()
                .map(|e| {
                    let r = run_of(&self.runs, e.offset, e.len);
                    let at = r.at + (e.offset - r.offset) as usize;
                    // SAFETY: the run covers the extent, so [at, at + len) lies in the buffer.
                    crate::cuda::Copy::ToHost { dst: unsafe { base.add(at) }, src: e.addr, len: e.len as usize }
                })
                .collect();
            // SAFETY: the staging buffer holds every range (above); the device ranges are the
            // caller's, of a live request (this function's contract), checked at registration.
            unsafe { d.copy(&copies)? };
            sum_staged(&mut sums, buf);
        } else if self.overlap {
            for e in &self.extents {
                let r = run_of(&self.runs, e.offset, e.len);
                let at = r.at + (e.offset - r.offset) as usize;
                // SAFETY: the caller's range is readable (this function's contract) and holds
                // `e.len` bytes; the staging buffer holds them from `at` (the run covers the
                // extent), and the two are distinct allocations.
                unsafe { std::ptr::copy_nonoverlapping(e.addr as *const u8, buf[at..].as_mut_ptr(), e.len as usize) };
            }
            sum_staged(&mut sums, buf);
        } else {
            for e in &self.extents {
                for (at, n) in block_pieces(e.offset, e.len) {
                    // SAFETY: within the caller's range of this extent, readable (this
                    // function's contract).
                    let src =
                        unsafe { std::slice::from_raw_parts((e.addr + (at - e.offset)) as *const u8, n as usize) };
                    // Summed first: the copy then reads the bytes from the cache.
                    sums.piece(at, src);
                    let r = run_of(&self.runs, at, n);
                    let to = r.at + (at - r.offset) as usize;
                    let dst = buf[to..to + n as usize].as_mut_ptr();
                    // SAFETY: the staging buffer holds `n` bytes from `to` (bounds-checked
                    // above), a distinct allocation from the caller's range.
                    unsafe { crate::stream_copy::copy(src.as_ptr(), dst, n as usize) };
                }
            }
        }
        self.sum_recxs.clear();
        for &b in &sums.blocks {
            match self.sum_recxs.last_mut() {
                Some(x) if x.rx_idx + x.rx_nr == b => x.rx_nr += 1,
                _ => self.sum_recxs.push(daos_recx_t { rx_idx: b, rx_nr: 1 }),
            }
        }
        self.sums = sums.sums;
        Ok(())
    }

    /// After a successful fetch of a record (`IoKind::Record`, or any fetch): the record DAOS
    /// returned, or why there is none this version reads: a miss.
    pub fn record_read(&self) -> Result<Record, Error> {
        let key = || self.dkey.display();
        let not_ours = || Error::Unverified { key: key(), why: "its record is not one this version writes" };
        match self.iods[self.niods as usize - 1].iod_size {
            0 => Err(Error::NoSuchKey { key: key() }),
            n if n as usize != RECORD_BYTES => Err(not_ours()),
            _ => Record::from_bytes(&self.rec_buf).ok_or_else(not_ours),
        }
    }

    /// After a successful fetch: checks what it read and copies it into the caller's buffers,
    /// block by block, each as soon as it verified (while it is still in the cache). Returns the
    /// record once every range asked for lies within the value, `expect` (the write another
    /// dkey of the key named, if any) is the record's, and every block verifies; otherwise the
    /// read is a miss: no record (never written, or by a version without records), a value
    /// shorter than asked, a key rewritten between its dkeys, or bytes that are not the
    /// recorded write's (corrupted, or another write's). On a miss the blocks before the bad
    /// one may have been copied already (what a failed read leaves in its buffer is undefined).
    ///
    /// # Safety
    /// The caller's buffers are still theirs to write: the request is live, and nothing ends
    /// it before this returns (`Attempt::complete_read`).
    pub unsafe fn verify_deliver(&self, expect: Option<u64>) -> Result<Record, Error> {
        let key = || self.dkey.display();
        let record = self.record_read()?;
        if let Some(e) = self.extents.iter().find(|e| e.offset + e.len > record.len) {
            return Err(Error::ShortRead { key: key(), want: e.offset + e.len, got: record.len });
        }
        if expect.is_some_and(|id| id != record.id) {
            return Err(Error::Unverified {
                key: key(),
                why: "it was rewritten while it was read (its chunks hold different writes)",
            });
        }
        if self.kind != IoKind::Fetch {
            return Ok(record);
        }
        let buf = self.stage.as_ref().map_or(&[][..], |s| s.as_slice());
        // Bytes DAOS wrote into the buffer: it trims a fetch's tail holes only.
        let fetched = if self.iods[0].iod_size == 0 { 0 } else { self.data_iov.iov_len.min(buf.len()) };
        let order = &self.extents; // by offset: a fetch's never overlap-ordered
        let device = self.local.device();
        let (mut first, mut sum) = (0usize, 0usize);
        for (x, r) in self.sum_recxs.iter().zip(&self.runs) {
            for b in x.rx_idx..x.rx_idx + x.rx_nr {
                let want = self.sums[sum];
                sum += 1;
                let (start, stop) = block_span(b, record.len);
                if start >= record.len {
                    continue; // past the value's end: nothing asked there
                }
                let at = r.at + (start - r.offset) as usize;
                let to = at + (stop - start) as usize;
                if to > fetched {
                    return Err(Error::Unverified {
                        key: key(),
                        why: "DAOS returned fewer bytes than its record holds",
                    });
                }
                if block_sum(record.id, b, &buf[at..to]) != want {
                    return Err(Error::Unverified {
                        key: key(),
                        why: "its bytes do not match their checksums (another write's, or corrupted)",
                    });
                }
                // The parts of the asked ranges in this block (those before `first` end before it).
                if device.is_some() {
                    continue; // copied below, once every block verified
                }
                while first < order.len() && order[first].offset + order[first].len <= start {
                    first += 1;
                }
                for e in &order[first..] {
                    if e.offset >= stop {
                        break;
                    }
                    let (lo, hi) = (e.offset.max(start), (e.offset + e.len).min(stop));
                    if lo >= hi {
                        continue;
                    }
                    let from = r.at + (lo - r.offset) as usize;
                    // SAFETY: `e.addr..+e.len` is a caller's range of this live transfer (valid
                    // for writes by this function's contract) and [lo, hi) lies within it; the
                    // staging buffer holds those bytes from `from` (the run covers the block); the
                    // two never overlap.
                    unsafe {
                        crate::stream_copy::copy(
                            buf[from..].as_ptr(),
                            (e.addr + (lo - e.offset)) as *mut u8,
                            (hi - lo) as usize,
                        )
                    };
                }
            }
        }
        if let Some(d) = device {
            // Every block verified: one copy per range into the caller's device memory, done
            // (the stream synchronised) before the read can be reported.
            let copies: Vec<crate::cuda::Copy> = order
                .iter()
                .map(|e| {
                    let r = run_of(&self.runs, e.offset, e.len);
                    let at = r.at + (e.offset - r.offset) as usize;
                    crate::cuda::Copy::ToDevice {
                        src: buf[at..at + e.len as usize].as_ptr(),
                        dst: e.addr,
                        len: e.len as usize,
                    }
                })
                .collect();
            // SAFETY: each source lies in the staging buffer (sliced above); the device ranges
            // are the caller's, of a live request (this function's contract).
            unsafe { d.copy(&copies)? };
        }
        Ok(record)
    }

    /// The dkey this I/O addresses.
    pub fn key(&self) -> &ObjectKey {
        &self.dkey
    }

    /// Bytes of the caller's this I/O moves.
    pub fn bytes(&self) -> u64 {
        self.extents.iter().map(|e| e.len).sum()
    }

    fn wire(&mut self) {
        // DAOS only reads key buffers, so shared (immutable) bytes can back the iovs.
        let dkey = self.dkey.as_bytes();
        self.dkey_iov = iov(dkey.as_ptr().cast_mut(), dkey.len());
        let mut n = 0usize;
        if !self.runs.is_empty() {
            self.recxs = self.runs.iter().map(|r| daos_recx_t { rx_idx: r.offset, rx_nr: r.len }).collect();
            let base = self.stage.as_mut().map_or(std::ptr::null_mut(), |s| s.as_mut_ptr());
            self.data_iov = iov(base, self.stage_len);
            self.akey_iovs[n] = iov(DATA_AKEY.as_ptr().cast_mut(), DATA_AKEY.len());
            self.iods[n] = daos_iod_t {
                iod_name: self.akey_iovs[n],
                iod_type: sys::DAOS_IOD_ARRAY as _,
                iod_size: 1,
                iod_flags: 0,
                iod_nr: self.recxs.len() as u32,
                iod_recxs: self.recxs.as_mut_ptr(),
            };
            self.sgls[n] = d_sg_list_t { sg_nr: 1, sg_nr_out: 0, sg_iovs: &mut self.data_iov };
            n += 1;
        }
        if !self.sum_recxs.is_empty() {
            self.sums_iov = iov(self.sums.as_mut_ptr().cast(), self.sums.len() * SUM_BYTES as usize);
            self.akey_iovs[n] = iov(SUMS_AKEY.as_ptr().cast_mut(), SUMS_AKEY.len());
            self.iods[n] = daos_iod_t {
                iod_name: self.akey_iovs[n],
                iod_type: sys::DAOS_IOD_ARRAY as _,
                iod_size: SUM_BYTES,
                iod_flags: 0,
                iod_nr: self.sum_recxs.len() as u32,
                iod_recxs: self.sum_recxs.as_mut_ptr(),
            };
            self.sgls[n] = d_sg_list_t { sg_nr: 1, sg_nr_out: 0, sg_iovs: &mut self.sums_iov };
            n += 1;
        }
        if self.kind == IoKind::Update {
            self.rec_buf = self.record.to_bytes();
        }
        self.rec_iov = iov(self.rec_buf.as_mut_ptr(), RECORD_BYTES);
        self.akey_iovs[n] = iov(REC_AKEY.as_ptr().cast_mut(), REC_AKEY.len());
        self.iods[n] = daos_iod_t {
            iod_name: self.akey_iovs[n],
            iod_type: sys::DAOS_IOD_SINGLE as _,
            iod_size: RECORD_BYTES as u64,
            iod_flags: 0,
            iod_nr: 1,
            iod_recxs: std::ptr::null_mut(),
        };
        self.sgls[n] = d_sg_list_t { sg_nr: 1, sg_nr_out: 0, sg_iovs: &mut self.rec_iov };
        self.niods = n as u32 + 1;
    }
}

impl Object {
    /// Launches `io` on `ev`. Returns the DAOS return code of the call itself (errors of the
    /// operation arrive later in `ev.ev_error`).
    ///
    /// Takes raw pointers, not references: once launched, the operation may complete and be
    /// freed by the thread that reaps it before this call has even returned.
    ///
    /// # Safety
    /// `io` and `ev` must stay alive and unmoved until `ev` has been reaped from its queue.
    /// DAOS touches only memory `io` owns (its staging buffer, its sums and record).
    pub unsafe fn launch(&self, io: *mut IoDesc, ev: *mut daos_event_t) -> i32 {
        // SAFETY: `io` is valid and not yet launched (this function's contract), so nothing else
        // touches it while `wire` points its descriptors at its own fields.
        unsafe { (*io).wire() };
        let lib: &Library = self.lib;
        let th = sys::daos_handle_t::default();
        // SAFETY: field addresses of a valid `io`; no reference is created.
        let (dkey, iod, sgl, kind, nr) = unsafe {
            (
                addr_of_mut!((*io).dkey_iov),
                addr_of_mut!((*io).iods).cast::<daos_iod_t>(),
                addr_of_mut!((*io).sgls).cast::<d_sg_list_t>(),
                (*io).kind,
                (*io).niods,
            )
        };
        match kind {
            // SAFETY: every pointer handed to DAOS stays valid and unmoved until `ev`
            // is reaped (this function's contract), which is what the asynchronous call needs.
            IoKind::Update => unsafe { lib.api.daos_obj_update(self.oh, th, 0, dkey, nr, iod, sgl, ev) },
            // SAFETY: as above.
            IoKind::Fetch | IoKind::Record => unsafe {
                lib.api.daos_obj_fetch(self.oh, th, 0, dkey, nr, iod, sgl, std::ptr::null_mut(), ev)
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_merge_what_overlaps_or_touches() {
        let r = runs(vec![(10, 20), (0, 5), (5, 8), (15, 30), (40, 41)]);
        assert_eq!(
            r,
            vec![
                Run { offset: 0, len: 8, at: 0 },
                Run { offset: 10, len: 20, at: 8 },
                Run { offset: 40, len: 1, at: 28 }
            ]
        );
        assert_eq!(run_of(&r, 12, 3).offset, 10);
        assert_eq!(run_of(&r, 40, 1).at, 28);
    }

    #[test]
    fn an_update_stages_the_callers_bytes_later_descriptors_winning() {
        let a = [1u8; 100];
        let b = [2u8; 50];
        let ext = [
            Extent { offset: 0, len: 100, addr: a.as_ptr() as u64 },
            Extent { offset: 80, len: 50, addr: b.as_ptr() as u64 },
        ];
        let mut io = IoDesc::update(ObjectKey::from_registration(b"k", 0), &ext, Record { id: 9, len: 130 });
        assert_eq!(io.stage_len(), 130);
        let pool = crate::stage::StagePool::new(1 << 20);
        io.attach(pool.try_take(130).unwrap().unwrap());
        // SAFETY: both ranges are live vectors.
        unsafe { io.stage_in() }.unwrap();
        let s = io.stage.as_ref().unwrap().as_slice();
        assert!(s[..80].iter().all(|&x| x == 1) && s[80..].iter().all(|&x| x == 2));
        assert_eq!(io.sums, vec![block_sum(9, 0, s)], "one block, to the value's end");
    }

    #[test]
    fn sums_taken_from_the_callers_bytes_match_the_staged_blocks() {
        // Descriptors of many sizes, touching or with gaps, from one source buffer: each sum
        // (taken on the way, from the caller's bytes) is the block's sum over what was staged.
        let src: Vec<u8> = (0..40 * BLOCK as usize).map(|i| (i.wrapping_mul(2654435761) >> 11) as u8).collect();
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let sizes = [1u64, 4096, 16 << 10, 24 << 10, BLOCK - 1, BLOCK, BLOCK + 1, 100_000, 3 * BLOCK];
        let pool = crate::stage::StagePool::new(1 << 30);
        for case in 0..600 {
            // The first extent in block 0 to 2, at its start or anywhere in it.
            let (mut ext, mut offset, mut from) = (Vec::new(), next(3) * BLOCK + next(2) * next(BLOCK), 0u64);
            for _ in 0..1 + next(6) {
                let len = sizes[next(sizes.len() as u64) as usize];
                if from + len > src.len() as u64 {
                    break;
                }
                ext.push(Extent { offset, len, addr: src.as_ptr() as u64 + from });
                offset += len + if next(3) == 0 { next(2 * BLOCK) } else { 0 };
                from += len + next(5000);
            }
            let end = ext.last().map_or(0, |e| e.offset + e.len);
            let len = end + if next(2) == 0 { 0 } else { next(BLOCK) };
            let mut io = IoDesc::update(ObjectKey::from_registration(b"k", 0), &ext, Record { id: case, len });
            io.attach(pool.try_take(io.stage_len()).unwrap().unwrap());
            // SAFETY: every extent lies within `src`.
            unsafe { io.stage_in() }.unwrap();
            let staged = io.stage.as_ref().unwrap().as_slice();
            let listed: Vec<u64> = io.sum_recxs.iter().flat_map(|x| x.rx_idx..x.rx_idx + x.rx_nr).collect();
            let covered = |start: u64, stop: u64| {
                (start..stop).all(|o| ext.iter().any(|e| (e.offset..e.offset + e.len).contains(&o)))
            };
            let whole: Vec<u64> =
                (0..len.div_ceil(BLOCK)).filter(|&b| covered(block_span(b, len).0, block_span(b, len).1)).collect();
            assert_eq!(listed, whole, "case {case}: the blocks covered whole are summed, and only those");
            let mut want = Vec::new();
            for x in &io.sum_recxs {
                for b in x.rx_idx..x.rx_idx + x.rx_nr {
                    let (start, stop) = block_span(b, len);
                    let r = run_of(&io.runs, start, stop - start);
                    let at = r.at + (start - r.offset) as usize;
                    want.push(block_sum(case, b, &staged[at..at + (stop - start) as usize]));
                }
            }
            assert_eq!(io.sums, want, "case {case}: {ext:?}, value of {len}");
            for e in &ext {
                let r = run_of(&io.runs, e.offset, e.len);
                let at = r.at + (e.offset - r.offset) as usize;
                let from = (e.addr - src.as_ptr() as u64) as usize;
                assert_eq!(&staged[at..at + e.len as usize], &src[from..from + e.len as usize], "case {case}");
            }
        }
    }

    #[test]
    fn only_blocks_a_write_covers_whole_are_checksummed() {
        let data = vec![5u8; 3 * BLOCK as usize];
        let at = data.as_ptr() as u64;
        // Bytes 1000.. 2.5 blocks of a value of 3 blocks: block 0 and 2 not whole.
        let ext = [Extent { offset: 1000, len: 2 * BLOCK + BLOCK / 2 - 1000, addr: at }];
        let mut io = IoDesc::update(ObjectKey::from_registration(b"k", 0), &ext, Record { id: 1, len: 3 * BLOCK });
        io.attach(crate::stage::StagePool::new(1 << 30).try_take(io.stage_len()).unwrap().unwrap());
        // SAFETY: a live vector, longer than the extent.
        unsafe { io.stage_in() }.unwrap();
        assert_eq!(io.sum_recxs.iter().map(|x| (x.rx_idx, x.rx_nr)).collect::<Vec<_>>(), vec![(1, 1)]);
    }

    #[test]
    fn a_fetch_reads_whole_blocks() {
        let ext = [
            Extent { offset: 100, len: 10, addr: 0 },
            Extent { offset: BLOCK + 5, len: BLOCK, addr: 0 },
            Extent { offset: 10 * BLOCK, len: 1, addr: 0 },
        ];
        let io = IoDesc::fetch(ObjectKey::from_registration(b"k", 0), &ext);
        assert_eq!(io.runs.len(), 2);
        assert_eq!(io.stage_len(), 4 * BLOCK as usize);
        assert_eq!(io.sum_recxs.iter().map(|x| (x.rx_idx, x.rx_nr)).collect::<Vec<_>>(), vec![(0, 3), (10, 1)]);
        assert_eq!(io.sums.len(), 4);
    }
}
