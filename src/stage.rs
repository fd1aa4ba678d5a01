// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//! The buffers every transfer goes through: DAOS only ever reads from and writes into these,
//! never a caller's memory. A write's bytes are copied in before its RPC is sent, a read's are
//! copied out only once they verified and while the caller still waits for them
//! (`crate::attempt`); so whatever DAOS does after a request ended touches only the plugin's
//! memory.
//!
//! Bounded: the buffers in use and the ones kept for reuse together stay within `cap` bytes
//! (`stage_bytes`), counted by the size of each allocation; an operation that finds no room
//! waits in the lanes' queue until an earlier one gives its buffer back (one larger than the
//! whole cap goes alone). A buffer goes back only when DAOS gives its operation back, never
//! before, and one leaked with its operation (an engine torn down under a dead server) is never
//! reused. Buffers DAOS still holds for requests that have ended (timed out, released) are
//! owed (`owe`): they leave the cap for an allowance of the same size, so a dead engine's
//! unanswered RPCs cannot starve the requests that follow (the healthy targets' among them),
//! and beyond that allowance they count against the cap again: the memory held stays within
//! twice the cap (plus one operation larger than it).
//!
//! Kept buffers are reused as they are, not zeroed: a read's bytes are accepted only when they
//! match the value's checksums (`crate::record`), and a write overwrites what it sends.
//!
//! A buffer that carries GPU memory's bytes is page-locked with the CUDA driver the first time
//! (`Stage::pin`), so the driver copies it by DMA; it stays pinned while it is kept and is
//! unpinned when freed. Pinned memory is therefore bounded as the buffers are (`pinned_bytes`).

use std::sync::Arc;

use parking_lot::Mutex;

use crate::error::{Error, Result};

pub struct StagePool {
    cap: usize,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Bytes of buffers handed out and not yet back, for live requests.
    in_use: usize,
    /// Bytes of buffers handed out that DAOS holds for requests that ended (`owe`).
    owed: usize,
    kept: Vec<Buffer>,
    kept_bytes: usize,
    /// Bytes of buffers (in use or kept) page-locked with the CUDA driver, now and at most.
    pinned: usize,
    pinned_peak: usize,
}

/// A staging allocation: page-aligned and a whole number of pages (the driver pins whole
/// pages, so two buffers never share one), zeroed when made; and the device that pinned it, if
/// one did.
struct Buffer {
    ptr: std::ptr::NonNull<u8>,
    len: usize,
    pinned: Option<&'static crate::cuda::Device>,
}

// SAFETY: the allocation is owned by the Buffer alone; the Buffer moves between threads whole.
unsafe impl Send for Buffer {}

const PAGE: usize = 4096;

impl Buffer {
    /// The allocation a buffer of `len` bytes takes (None: more than an allocation can be).
    fn size_for(len: usize) -> Option<usize> {
        len.max(1).checked_next_multiple_of(PAGE).filter(|&n| n <= isize::MAX as usize)
    }

    /// A buffer of `size` bytes (a `size_for`); None when the allocator refuses (out of
    /// memory, or a strict overcommit limit).
    fn new(size: usize) -> Option<Buffer> {
        let layout = std::alloc::Layout::from_size_align(size, PAGE).ok()?;
        // SAFETY: a layout of non-zero size.
        let ptr = std::ptr::NonNull::new(unsafe { std::alloc::alloc_zeroed(layout) })?;
        Some(Buffer { ptr, len: size, pinned: None })
    }

    fn len(&self) -> usize {
        self.len
    }

    /// Frees it, unpinning it first; returns the pinned bytes given back. One the driver
    /// would not unpin is never freed (its pages stay locked and counted).
    fn free(self) -> usize {
        let mut me = std::mem::ManuallyDrop::new(self);
        let unpinned = match me.pinned.take() {
            // SAFETY: pinned by `Stage::pin` at this address, and no longer in use (kept, or
            // dropped by its Stage).
            Some(d) if unsafe { d.unpin(me.ptr.as_ptr()) } => me.len,
            Some(_) => return 0,
            None => 0,
        };
        // SAFETY: allocated in `new` with this layout, freed once (the Buffer is consumed).
        unsafe {
            std::alloc::dealloc(me.ptr.as_ptr(), std::alloc::Layout::from_size_align_unchecked(me.len, PAGE));
        }
        unpinned
    }
}

impl StagePool {
    pub fn new(cap: usize) -> Arc<StagePool> {
        Arc::new(StagePool { cap: cap.max(1), state: Mutex::new(State::default()) })
    }

    /// A buffer of `len` bytes, or None while the buffers in use leave no room for it; an error
    /// when the memory for a new one cannot be had (the operation fails, nothing waits). The
    /// smallest kept buffer at least as large and at most a quarter larger, the last given back
    /// of those, is reused; otherwise kept ones are freed to make room for a new one. The
    /// buffer counts against the cap by its whole allocation, so a larger one reused would cost
    /// room for as long as it is held (a pool kept from 4 MiB writes would hold half as many
    /// 2 MiB reads).
    pub fn try_take(self: &Arc<Self>, len: usize) -> Result<Option<Stage>> {
        let mut s = self.state.lock();
        let used = self.charged(&s);
        let fits = |n: usize| used == 0 || used.saturating_add(n) <= self.cap;
        let exact = Buffer::size_for(len).ok_or(Error::StagingMemory { bytes: len })?;
        if !fits(exact) {
            return Ok(None);
        }
        let pick = (0..s.kept.len())
            .filter(|&i| (exact..=exact + exact / 4).contains(&s.kept[i].len()) && fits(s.kept[i].len()))
            // Of the best fits, the one given back last: the likeliest to be in the cache still
            // (no gain measured on the test machines, whose runs are CPU-bound).
            .min_by_key(|&i| (s.kept[i].len(), std::cmp::Reverse(i)));
        let charge = pick.map_or(exact, |i| s.kept[i].len());
        s.in_use += charge;
        let buf = match pick {
            Some(i) => {
                let b = s.kept.remove(i); // keeps the order they were given back in
                s.kept_bytes -= b.len();
                b
            }
            None => {
                // Those given back first (the coldest) are freed for the room.
                let (mut n, mut over) = (0, (self.charged(&s) + s.kept_bytes).saturating_sub(self.cap));
                while over > 0 && n < s.kept.len() {
                    over = over.saturating_sub(s.kept[n].len());
                    n += 1;
                }
                let freed: Vec<Buffer> = s.kept.drain(..n).collect();
                s.kept_bytes -= freed.iter().map(Buffer::len).sum::<usize>();
                drop(s);
                self.free(freed);
                match Buffer::new(exact) {
                    Some(b) => b,
                    None => {
                        self.state.lock().in_use -= charge;
                        return Err(Error::StagingMemory { bytes: len });
                    }
                }
            }
        };
        Ok(Some(Stage { buf: Some(buf), len, owed: false, pool: self.clone() }))
    }

    /// What counts against the cap: live requests' buffers, and owed ones beyond their
    /// allowance (as large as the cap).
    fn charged(&self, s: &State) -> usize {
        s.in_use + s.owed.saturating_sub(self.cap)
    }

    /// A request ended while DAOS holds buffers of its (`bytes` of them, by allocation): they
    /// move from the cap to the owed allowance until DAOS gives them back (`Stage::owed`).
    pub fn owe(&self, bytes: usize) {
        let mut s = self.state.lock();
        s.in_use -= bytes;
        s.owed += bytes;
    }

    fn give_back(&self, buf: Buffer, owed: bool) {
        let mut s = self.state.lock();
        if owed {
            s.owed -= buf.len();
        } else {
            s.in_use -= buf.len();
        }
        if self.charged(&s) + s.kept_bytes + buf.len() <= self.cap {
            s.kept_bytes += buf.len();
            s.kept.push(buf);
        } else {
            drop(s);
            self.free(vec![buf]);
        }
    }

    /// Frees buffers (outside the lock: unpinning calls the driver).
    fn free(&self, bufs: Vec<Buffer>) {
        let unpinned: usize = bufs.into_iter().map(Buffer::free).sum();
        if unpinned > 0 {
            self.state.lock().pinned -= unpinned;
        }
    }

    /// Bytes of staging buffers pinned for GPU copies: now, and the most at once. Both stay
    /// within the pool's bound (the cap, twice it while DAOS owes buffers).
    pub fn pinned_bytes(&self) -> (usize, usize) {
        let s = self.state.lock();
        (s.pinned, s.pinned_peak)
    }

    /// Bytes of buffers in use now (handed out, DAOS or a transfer holding them; owed ones
    /// included).
    pub fn in_use(&self) -> usize {
        let s = self.state.lock();
        s.in_use + s.owed
    }

    #[cfg(test)]
    fn kept_bytes(&self) -> usize {
        self.state.lock().kept_bytes
    }
}

/// One staging buffer of `len` bytes, back in its pool when dropped. Its heap allocation never
/// moves while it exists, so DAOS may hold pointers into it for as long as its operation owns it.
pub struct Stage {
    /// Always Some until dropped.
    buf: Option<Buffer>,
    len: usize,
    /// Counted in the pool's owed allowance (`StagePool::owe`), not against its cap.
    owed: bool,
    pool: Arc<StagePool>,
}

impl Stage {
    fn buffer(&self) -> &Buffer {
        self.buf.as_ref().expect("a live stage holds its buffer")
    }

    /// What it counts against the pool's cap: its whole allocation.
    pub fn charge(&self) -> usize {
        self.buffer().len()
    }

    /// Its request ended while DAOS holds it, and the pool moved its charge to the owed
    /// allowance: it goes back from there.
    pub fn mark_owed(&mut self) {
        self.owed = true;
    }

    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.buffer().ptr.as_ptr()
    }

    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: the allocation holds at least `len` initialised (zeroed at allocation) bytes,
        // owned by this stage while it lives.
        unsafe { std::slice::from_raw_parts(self.buffer().ptr.as_ptr(), self.len) }
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as in `as_slice`, borrowed mutably through `self`.
        unsafe { std::slice::from_raw_parts_mut(self.buffer().ptr.as_ptr(), self.len) }
    }

    /// Page-locks the whole buffer with `device`'s driver for its copies, once per buffer (it
    /// stays pinned while the pool keeps it). Not pinned (the driver refused) is only slower.
    pub fn pin(&mut self, device: &'static crate::cuda::Device) {
        let buf = self.buf.as_mut().expect("a live stage holds its buffer");
        if buf.pinned.is_some() {
            return;
        }
        // SAFETY: the allocation lives (and never moves) until `Buffer::free` unpins it.
        if unsafe { device.pin(buf.ptr.as_ptr(), buf.len) } {
            buf.pinned = Some(device);
            let n = buf.len;
            let mut s = self.pool.state.lock();
            s.pinned += n;
            s.pinned_peak = s.pinned_peak.max(s.pinned);
        }
    }
}

impl Drop for Stage {
    fn drop(&mut self) {
        if let Some(buf) = self.buf.take() {
            self.pool.give_back(buf, self.owed);
        }
    }
}

impl Drop for StagePool {
    fn drop(&mut self) {
        let kept = std::mem::take(&mut self.state.get_mut().kept);
        for b in kept {
            b.free();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn take(pool: &Arc<StagePool>, len: usize) -> Option<Stage> {
        pool.try_take(len).expect("the test's buffers fit in memory")
    }

    #[test]
    fn memory_that_cannot_be_had_is_an_error_and_leaves_the_pool_as_it_was() {
        // 256 TiB: past the 128 TiB of address space a Linux process maps by default, refused
        // whatever the overcommit policy.
        let pool = StagePool::new(usize::MAX / 2);
        let err = pool.try_take(1 << 48).err().expect("refused");
        assert!(matches!(err, Error::StagingMemory { bytes } if bytes == 1 << 48), "{err}");
        assert_eq!(err.status(), crate::error::Status::Backend);
        assert!(err.to_string().contains("stage_bytes"), "{err}");
        assert_eq!(pool.in_use(), 0, "the failed take holds nothing");
        let b = take(&pool, 1 << 20).expect("room");
        assert_eq!(b.charge(), 1 << 20);
        // Past what a layout can describe: refused too, not a panic.
        assert!(matches!(pool.try_take(usize::MAX - 10), Err(Error::StagingMemory { .. })));
    }

    #[test]
    fn buffers_are_reused_and_small_takes_leave_large_buffers() {
        let pool = StagePool::new(64 << 20);
        let mut b = take(&pool, 1 << 20).unwrap();
        let addr = b.as_mut_ptr() as usize;
        drop(b);
        assert_eq!((pool.in_use(), pool.kept_bytes()), (0, 1 << 20));
        let mut b = take(&pool, 900 << 10).unwrap();
        assert_eq!(b.as_mut_ptr() as usize, addr, "the kept buffer is reused");
        assert_eq!(b.as_slice().len(), 900 << 10);
        assert_eq!(pool.in_use(), 1 << 20, "a buffer counts by its whole allocation");
        drop(b);
        let small = take(&pool, 600 << 10).unwrap();
        assert_eq!(pool.kept_bytes(), 1 << 20, "the 1 MiB buffer stays for a large transfer");
        assert_eq!(pool.in_use(), 600 << 10);
        drop(small);
    }

    #[test]
    fn the_cap_bounds_buffers_in_use_and_kept() {
        let pool = StagePool::new(16 << 20);
        let held: Vec<Stage> = (0..4).map(|_| take(&pool, 4 << 20).unwrap()).collect();
        assert!(take(&pool, 1).is_none(), "no room while 16 MiB are in use");
        drop(held);
        assert!(pool.in_use() == 0 && pool.kept_bytes() <= 16 << 20);
        // Larger than the cap: goes alone, then waits for nothing.
        let big = take(&pool, 64 << 20).unwrap();
        assert!(take(&pool, 1).is_none());
        drop(big);
        assert!(pool.kept_bytes() <= 16 << 20, "{} kept", pool.kept_bytes());
        let again: Vec<Stage> = (0..4).map(|_| take(&pool, 4 << 20).unwrap()).collect();
        assert_eq!(pool.in_use(), 16 << 20);
        drop(again);
    }

    #[test]
    fn memory_held_stays_within_the_cap_whatever_buffers_are_reused() {
        // Large buffers kept, then smaller takes (too small to reuse them): each counts by its
        // allocation, and kept ones are freed for room, so what is held never passes the cap.
        let pool = StagePool::new(64 << 20);
        let large: Vec<Stage> = (0..8).map(|_| take(&pool, 8 << 20).unwrap()).collect();
        drop(large);
        let mut held = Vec::new();
        while let Some(b) = take(&pool, (4 << 20) + 4096) {
            held.push(b);
            assert!(held.len() < 64, "the cap stops the takes");
        }
        let total: usize = held.iter().map(Stage::charge).sum();
        assert!(total <= 64 << 20 && pool.in_use() == total, "{total} bytes held under a 64 MiB cap");
        assert!(pool.in_use() + pool.kept_bytes() <= 64 << 20);
    }

    #[test]
    fn a_larger_kept_buffer_is_reused_only_where_the_room_allows() {
        // Kept 4 MiB buffers, then 2 MiB takes: new 2 MiB buffers are made (kept ones freed
        // for them), so the cap holds as many 2 MiB takes as it would without the kept ones.
        let pool = StagePool::new(16 << 20);
        drop((0..4).map(|_| take(&pool, 4 << 20).unwrap()).collect::<Vec<_>>());
        let mut held = Vec::new();
        while let Some(b) = take(&pool, 2 << 20) {
            held.push(b);
        }
        assert_eq!(held.len(), 8, "2 MiB buffers under a 16 MiB cap");
        assert!(pool.in_use() <= 16 << 20 && pool.in_use() + pool.kept_bytes() <= 16 << 20);
    }

    #[test]
    fn buffers_owed_to_daos_leave_the_cap_for_an_allowance_of_its_size() {
        let pool = StagePool::new(16 << 20);
        let mut owed: Vec<Stage> = (0..4).map(|_| take(&pool, 4 << 20).unwrap()).collect();
        assert!(take(&pool, 4 << 20).is_none(), "the cap is full");
        // Their requests ended while DAOS holds them: live requests get the whole cap again.
        pool.owe(owed.iter().map(Stage::charge).sum());
        owed.iter_mut().for_each(Stage::mark_owed);
        let live: Vec<Stage> = (0..4).map(|_| take(&pool, 4 << 20).unwrap()).collect();
        assert!(take(&pool, 4 << 20).is_none(), "the cap is full again");
        assert_eq!(pool.in_use(), 32 << 20, "owed and live, within twice the cap");
        // Owed beyond the allowance counts against the cap.
        let mut more: Vec<Stage> = live;
        pool.owe(more.iter().map(Stage::charge).sum());
        more.iter_mut().for_each(Stage::mark_owed);
        assert!(take(&pool, 4 << 20).is_none(), "owed past the allowance takes the cap's room");
        drop(more);
        assert!(take(&pool, 4 << 20).is_some(), "DAOS answered: room again");
        drop(owed);
        assert_eq!(pool.in_use(), 0);
    }
}
