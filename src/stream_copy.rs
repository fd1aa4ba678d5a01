// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//! The copies between a caller's memory and the staging buffers, with non-temporal
//! (streaming) stores on x86-64. The plugin does not read the destination again soon: a verified
//! read's bytes are the caller's from then on, and a write's staged bytes are next read by the
//! network's send, after the rest of the operation is copied. Writing them around the cache
//! saves the cache line fills a plain copy reads from memory first (about a third of a cold
//! copy's memory traffic), and leaves the cache to the bytes being copied and checksummed.

/// Below this a plain copy: a streaming copy's fence costs more than it saves.
const STREAM_MIN: usize = 16 << 10;

/// Copies `len` bytes from `src` to `dst`.
///
/// # Safety
/// As `std::ptr::copy_nonoverlapping`: `src` valid for reads and `dst` for writes of `len`
/// bytes, the two not overlapping.
pub unsafe fn copy(src: *const u8, dst: *mut u8, len: usize) {
    #[cfg(target_arch = "x86_64")]
    if len >= STREAM_MIN && std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the contract above; AVX2 is there (checked).
        return unsafe { stream_avx2(src, dst, len) };
    }
    // SAFETY: the contract above.
    unsafe { std::ptr::copy_nonoverlapping(src, dst, len) }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn stream_avx2(src: *const u8, dst: *mut u8, len: usize) {
    use std::arch::x86_64::{__m256i, _mm256_loadu_si256, _mm256_stream_si256, _mm_sfence};
    // Streaming stores need 32-byte aligned destinations: the head up to that is copied plainly.
    let head = dst.align_offset(32).min(len);
    // SAFETY: within both ranges (head <= len).
    unsafe { std::ptr::copy_nonoverlapping(src, dst, head) };
    let body = (len - head) & !127;
    // SAFETY: head + body <= len, so these stay within (or one past) both ranges.
    let (mut s, mut d, end) = unsafe { (src.add(head), dst.add(head), dst.add(head + body)) };
    while d < end {
        // SAFETY: 128 bytes within both ranges; `d` is 32-byte aligned, `s` read unaligned.
        unsafe {
            let a = _mm256_loadu_si256(s.cast::<__m256i>());
            let b = _mm256_loadu_si256(s.add(32).cast::<__m256i>());
            let c = _mm256_loadu_si256(s.add(64).cast::<__m256i>());
            let e = _mm256_loadu_si256(s.add(96).cast::<__m256i>());
            _mm256_stream_si256(d.cast::<__m256i>(), a);
            _mm256_stream_si256(d.add(32).cast::<__m256i>(), b);
            _mm256_stream_si256(d.add(64).cast::<__m256i>(), c);
            _mm256_stream_si256(d.add(96).cast::<__m256i>(), e);
            s = s.add(128);
            d = d.add(128);
        }
    }
    // The streamed stores are ordered before whatever follows (the read's status, or the
    // launch that hands the staged bytes to DAOS).
    _mm_sfence();
    // SAFETY: the tail lies within both ranges.
    unsafe { std::ptr::copy_nonoverlapping(s, d, len - head - body) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_every_length_and_alignment() {
        let src: Vec<u8> = (0..200_000u32).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
        for &len in &[0usize, 1, 31, 4095, STREAM_MIN, STREAM_MIN + 1, 65536 + 77, 150_000] {
            for off in [0usize, 1, 17, 31] {
                let mut dst = vec![0xAAu8; len + 64];
                // SAFETY: both ranges in bounds, distinct allocations.
                unsafe { copy(src.as_ptr().add(3), dst.as_mut_ptr().add(off), len) };
                assert_eq!(&dst[off..off + len], &src[3..3 + len], "len {len} off {off}");
                assert!(dst[..off].iter().all(|&b| b == 0xAA), "wrote before the range");
                assert!(dst[off + len..].iter().all(|&b| b == 0xAA), "wrote past the range");
            }
        }
    }
}
