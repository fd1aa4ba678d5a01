// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//! The data copy of update and fetch.
//!
//! The store keeps array bytes in 1 MiB chunks, so every transfer is a series of copies of at
//! most 1 MiB. glibc's `memcpy` uses ordinary (cached) stores below its non-temporal threshold
//! (several MiB), and two threads copying 1 MiB pieces that way reach about half the speed of
//! one big `memcpy`, which streams. So pieces of [`NT_THRESHOLD`] bytes or more are copied here
//! with non-temporal stores on x86_64: an ordinary copy up to the first aligned destination
//! byte, a streamed body (unaligned loads, aligned streaming stores, 4 vectors a step), an
//! ordinary copy of the tail, then `sfence`. AVX is used when the CPU has it (checked once),
//! SSE2 otherwise. Smaller pieces, and other architectures, use `copy_nonoverlapping`.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};

/// Pieces at least this long are copied with non-temporal stores (x86_64). Measured with
/// `tests/copy_bench.rs`: see README.md.
pub const NT_THRESHOLD: usize = 256 << 10;

static THRESHOLD: AtomicUsize = AtomicUsize::new(NT_THRESHOLD);

/// For benchmarks: sets the streaming threshold (`usize::MAX`: never stream) and returns the
/// previous one. Not part of the C API.
#[doc(hidden)]
pub fn set_threshold(t: usize) -> usize {
    THRESHOLD.swap(t, Relaxed)
}

/// Whether update and fetch copy data bytes (`copy on|off`, see README.md). Off is for
/// profiling only: it takes the data copy out of the simulator so that what remains of a
/// transfer's CPU time is the plugin's, the simulator's bookkeeping and the host's.
static COPYING: AtomicBool = AtomicBool::new(true);

/// Sets whether data copies happen (`copy on|off`).
pub fn set_copying(on: bool) {
    COPYING.store(on, Relaxed);
}

/// Whether data copies happen. Each caller of [`copy_raw`] in update and fetch reads it once
/// per call and skips the copy when it is off; where the copy would have initialised memory (a
/// store chunk's new bytes, a single value) it zero-fills instead.
#[inline]
pub fn copying() -> bool {
    COPYING.load(Relaxed)
}

/// Copies `src` into `dst` (same length).
#[inline]
pub fn copy(dst: &mut [u8], src: &[u8]) {
    assert_eq!(dst.len(), src.len(), "copy: length mismatch");
    // SAFETY: two distinct slices of the same length (a `&mut` cannot alias a `&`).
    unsafe { copy_raw(dst.as_mut_ptr(), src.as_ptr(), src.len()) }
}

/// Copies `n` bytes from `src` to `dst`.
///
/// # Safety
/// As for `std::ptr::copy_nonoverlapping`: both ranges valid, and not overlapping.
#[inline]
pub unsafe fn copy_raw(dst: *mut u8, src: *const u8, n: usize) {
    // SAFETY: the caller keeps this function's `# Safety` contract, which is all the operations
    // below need.
    unsafe {
        #[cfg(target_arch = "x86_64")]
        if n >= THRESHOLD.load(Relaxed) {
            return x86::stream(dst, src, n);
        }
        std::ptr::copy_nonoverlapping(src, dst, n);
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;
    use std::sync::atomic::{AtomicU8, Ordering::Relaxed};

    /// 0 = not checked yet, 1 = SSE2 only, 2 = AVX.
    static LEVEL: AtomicU8 = AtomicU8::new(0);

    fn has_avx() -> bool {
        match LEVEL.load(Relaxed) {
            0 => {
                let avx = std::is_x86_feature_detected!("avx");
                LEVEL.store(if avx { 2 } else { 1 }, Relaxed);
                avx
            }
            l => l == 2,
        }
    }

    /// Non-temporal copy of `n` bytes (any `n`; worth it only for big ones).
    pub unsafe fn stream(dst: *mut u8, src: *const u8, n: usize) {
        // SAFETY: the caller keeps this function's `# Safety` contract, which is all the operations
        // below need.
        unsafe {
            if has_avx() {
                stream_avx(dst, src, n)
            } else {
                stream_sse2(dst, src, n)
            }
        }
    }

    /// Bytes to copy before `p` is `align`-aligned.
    fn head(p: *mut u8, align: usize) -> usize {
        (align - (p as usize & (align - 1))) & (align - 1)
    }

    /// Defines a streaming copy for one vector width: `$v`-byte vectors of type `$t`,
    /// unaligned loads with `$load`, aligned non-temporal stores with `$stream`.
    macro_rules! stream_fn {
        ($(#[$attr:meta])* $name:ident, $v:expr, $t:ty, $load:ident, $stream:ident) => {
            $(#[$attr])*
            unsafe fn $name(dst: *mut u8, src: *const u8, n: usize) {
                const V: usize = $v;
                const STEP: usize = 4 * V;
                let h = head(dst, V).min(n);
                // SAFETY: the caller's contract (`dst` and `src` valid for `n` bytes, not
                // overlapping, the CPU has the feature): every access below stays within the `n`
                // bytes, and the vector stores land on `V`-aligned addresses (after the head).
                unsafe {
                std::ptr::copy_nonoverlapping(src, dst, h);
                let (mut d, mut s) = (dst.add(h), src.add(h));
                let body = (n - h) / STEP * STEP;
                let end = d.add(body);
                while d < end {
                    let a = $load(s as *const $t);
                    let b = $load(s.add(V) as *const $t);
                    let c = $load(s.add(2 * V) as *const $t);
                    let e = $load(s.add(3 * V) as *const $t);
                    $stream(d as *mut $t, a);
                    $stream(d.add(V) as *mut $t, b);
                    $stream(d.add(2 * V) as *mut $t, c);
                    $stream(d.add(3 * V) as *mut $t, e);
                    d = d.add(STEP);
                    s = s.add(STEP);
                }
                std::ptr::copy_nonoverlapping(s, d, n - h - body);
                _mm_sfence();
                }
            }
        };
    }

    stream_fn!(stream_sse2, 16, __m128i, _mm_loadu_si128, _mm_stream_si128);
    stream_fn!(
        #[target_feature(enable = "avx")]
        stream_avx,
        32,
        __m256i,
        _mm256_loadu_si256,
        _mm256_stream_si256
    );

    #[cfg(test)]
    pub type RawCopy = unsafe fn(*mut u8, *const u8, usize);

    #[cfg(test)]
    pub fn variants() -> Vec<(&'static str, RawCopy)> {
        let mut v: Vec<(&'static str, RawCopy)> = vec![("sse2", stream_sse2)];
        if has_avx() {
            // SAFETY: AVX is present (checked just above); the caller of the RawCopy keeps its contract.
            v.push(("avx", |d, s, n| unsafe { stream_avx(d, s, n) }));
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type CopyFn<'a> = &'a dyn Fn(*mut u8, *const u8, usize);

    const PAD: usize = 64;
    const MAX_LEN: usize = (1 << 20) + 4096;

    /// Source and destination buffers, 64-byte aligned, reused by every case.
    struct Bench {
        src: Vec<u8>,
        dst: Vec<u8>,
        sa: usize,
        da: usize,
        case: usize,
    }

    impl Bench {
        fn new() -> Bench {
            let mut x: u32 = 0x9e37_79b9;
            let src: Vec<u8> = (0..MAX_LEN + 8192)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 17;
                    x ^= x << 5;
                    x as u8
                })
                .collect();
            let dst = vec![0u8; MAX_LEN + 4 * PAD];
            let sa = src.as_ptr().align_offset(64);
            let da = dst.as_ptr().align_offset(64);
            Bench { src, dst, sa, da, case: 0 }
        }

        /// Copies `len` bytes from a source at 64-byte alignment + `so` to a destination at
        /// 64-byte alignment + `dof` with `f`, and checks the bytes and the guards around them.
        fn check(&mut self, f: CopyFn, len: usize, so: usize, dof: usize, what: &str) {
            self.case += 1;
            // Different data and guard bytes each case, so a missed store cannot pass.
            let s0 = self.sa + so + 64 * (self.case % 64);
            let guard = (self.case % 251) as u8 ^ 0x5a;
            let d0 = self.da + PAD + dof;
            self.dst[d0 - PAD..d0 + len + PAD].fill(guard);
            f(self.dst[d0..].as_mut_ptr(), self.src[s0..].as_ptr(), len);
            let (out, want) = (&self.dst[d0..d0 + len], &self.src[s0..s0 + len]);
            if out != want {
                let i = out.iter().zip(want).position(|(a, b)| a != b).unwrap();
                panic!("{what}: len {len} src+{so} dst+{dof}: first difference at byte {i}");
            }
            let around = self.dst[d0 - PAD..d0].iter().chain(&self.dst[d0 + len..d0 + len + PAD]);
            assert!(around.into_iter().all(|&b| b == guard), "{what}: len {len} src+{so} dst+{dof}: wrote outside");
        }
    }

    /// (length, whether to try every alignment): small and odd lengths, and lengths around the
    /// threshold and the 1 MiB chunk size.
    fn lengths() -> Vec<(usize, bool)> {
        let mut v: Vec<(usize, bool)> =
            [0, 1, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 255, 256, 1000, 4095, 4096]
                .iter()
                .map(|&l| (l, true))
                .collect();
        for d in [0usize, 1, 3, 31, 32, 33, 127, 128, 129] {
            v.push((NT_THRESHOLD - 1 - d, d < 4));
            v.push((NT_THRESHOLD + d, d < 4 || d == 129));
        }
        v.extend([(3 * NT_THRESHOLD / 2 + 13, false), ((1 << 20) - 5, false), (1 << 20, true), ((1 << 20) + 77, true)]);
        v
    }

    fn alignments(all: bool) -> (&'static [usize], &'static [usize]) {
        if all {
            (&[0, 1, 7, 8, 15, 16, 31, 33], &[0, 1, 5, 8, 15, 16, 17, 31, 32, 63])
        } else {
            (&[0, 3], &[0, 1, 16, 31])
        }
    }

    #[test]
    fn copy_all_alignments() {
        let mut b = Bench::new();
        for (len, all) in lengths() {
            let (sos, dofs) = alignments(all);
            for &so in sos {
                for &dof in dofs {
                    // SAFETY: the bench hands buffers valid for `n` bytes that do not overlap.
                    b.check(&|d, s, n| unsafe { copy_raw(d, s, n) }, len, so, dof, "copy_raw");
                }
            }
        }
        let src = b.src[..NT_THRESHOLD + 3].to_vec();
        let mut dst = vec![0u8; src.len()];
        copy(&mut dst, &src);
        assert_eq!(dst, src);
    }

    /// Every streaming variant the CPU has, also below the threshold (down to a few bytes).
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn stream_variants() {
        let mut b = Bench::new();
        let mut lens = lengths();
        lens.extend([(300, true), (511, true), (512, true), (513, true), (777, true)]);
        for (name, f) in x86::variants() {
            for &(len, all) in &lens {
                let (sos, dofs) = alignments(all);
                for &so in sos {
                    for &dof in dofs {
                        // SAFETY: as above; `variants` lists only copies this CPU supports.
                        b.check(&|d, s, n| unsafe { f(d, s, n) }, len, so, dof, name);
                    }
                }
            }
        }
    }
}
