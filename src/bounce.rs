// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//! Staging buffers for reads (`stage_reads`), kept for reuse.
//!
//! A staged fetch lands in a buffer of the engine's, and is copied into the caller's only if it
//! succeeded in time. A fresh allocation of a few MiB per fold costs more than the copy: the
//! kernel maps it page by page on DAOS's first write and unmaps it on free (on daos-sim, reads
//! of 40 MiB keys went 10x slower that way). So buffers go back to a pool when DAOS gives their
//! fetch back, never before: a fetch DAOS still holds keeps its buffer, and one leaked with its
//! operation (an engine destroyed on a dead server) is never reused.

use std::sync::Arc;

use parking_lot::Mutex;

/// Most bytes the pool keeps between reads (buffers in use do not count).
const POOL_BYTES: usize = 256 << 20;

/// Buffers free for reuse, over all the lanes of one engine.
#[derive(Default)]
pub struct BouncePool {
    free: Mutex<Free>,
}

#[derive(Default)]
struct Free {
    bufs: Vec<Vec<u8>>,
    bytes: usize,
}

impl BouncePool {
    pub fn new() -> Arc<BouncePool> {
        Arc::new(BouncePool::default())
    }

    /// A zeroed buffer of `len` bytes: a kept one at least that large (and at most twice, so a
    /// small read does not pin a large buffer), else a new one. Zeroed because a fetch need not
    /// write every byte of its buffer, and a kept buffer holds another key's bytes.
    pub fn take(self: &Arc<Self>, len: usize) -> Bounce {
        let kept = {
            let mut f = self.free.lock();
            let pick = f.bufs.iter().position(|b| b.capacity() >= len && b.capacity() / 2 <= len.max(1));
            pick.map(|i| {
                let b = f.bufs.swap_remove(i);
                f.bytes -= b.capacity();
                b
            })
        };
        let buf = match kept {
            Some(mut b) => {
                b.clear();
                b.resize(len, 0);
                b
            }
            None => vec![0u8; len],
        };
        Bounce { buf, pool: self.clone() }
    }

    fn give_back(&self, buf: Vec<u8>) {
        let mut f = self.free.lock();
        if f.bytes + buf.capacity() <= POOL_BYTES {
            f.bytes += buf.capacity();
            f.bufs.push(buf);
        }
    }

    #[cfg(test)]
    fn kept_bytes(&self) -> usize {
        self.free.lock().bytes
    }
}

/// One staging buffer, back in its pool when dropped. Its heap allocation never moves while it
/// exists, so DAOS may hold pointers into it for as long as the buffer is owned by the fetch.
pub struct Bounce {
    buf: Vec<u8>,
    pool: Arc<BouncePool>,
}

impl Bounce {
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.buf.as_mut_ptr()
    }

    pub fn as_slice(&self) -> &[u8] {
        &self.buf
    }
}

impl Drop for Bounce {
    fn drop(&mut self) {
        self.pool.give_back(std::mem::take(&mut self.buf));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_comes_back_zeroed_and_is_reused() {
        let pool = BouncePool::new();
        let mut b = pool.take(1 << 20);
        let addr = b.as_mut_ptr() as usize;
        b.buf.fill(0xAB);
        drop(b);
        assert_eq!(pool.kept_bytes(), 1 << 20);
        let b = pool.take(600 << 10);
        assert_eq!(b.as_mut_ptr_addr(), addr, "the kept buffer is reused");
        assert!(b.as_slice().iter().all(|&x| x == 0), "reused buffers are zeroed");
        assert_eq!(b.as_slice().len(), 600 << 10);
        assert_eq!(pool.kept_bytes(), 0);
    }

    #[test]
    fn small_reads_do_not_take_large_buffers_and_the_pool_is_capped() {
        let pool = BouncePool::new();
        drop(pool.take(8 << 20));
        let small = pool.take(4 << 10);
        assert_eq!(small.as_slice().len(), 4 << 10);
        assert_eq!(pool.kept_bytes(), 8 << 20, "the 8 MiB buffer stays for a large read");
        drop(small);
        let many: Vec<Bounce> = (0..40).map(|_| pool.take(16 << 20)).collect();
        drop(many);
        assert!(pool.kept_bytes() <= POOL_BYTES, "{} bytes kept", pool.kept_bytes());
    }

    impl Bounce {
        fn as_mut_ptr_addr(&self) -> usize {
            self.buf.as_ptr() as usize
        }
    }
}
