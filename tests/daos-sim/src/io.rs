// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//! Object I/O: argument validation (client side, at submission) and execution (server side +
//! data transfer, at completion) of update, fetch, punch and query_key.
//!
//! All functions here take the caller's raw descriptors. As with real DAOS, the caller keeps
//! dkey, iods, recxs, sgls and buffers alive and unchanged until the operation completes.

use std::os::raw::c_int;
use std::slice;
use std::sync::atomic::Ordering::Relaxed;

use crate::copy::{copy_raw, copying};
use crate::ffi::*;
use crate::handles::ObjH;
use crate::sim::STATS;
use crate::store::{AkeyVal, DkeyData};

static ZEROS: [u8; 4096] = [0; 4096];

/// A scatter/gather cursor over an sgl's non-empty iovs, in packed byte order. It reads the
/// caller's iov array in place (no copy of the descriptors per RPC).
struct Cursor<'a> {
    iovs: &'a [d_iov_t],
    /// Fetch (capacity = iov_buf_len) vs update (data = iov_len).
    use_buf_len: bool,
    i: usize,
    off: usize,
    pos: u64,
}

impl<'a> Cursor<'a> {
    /// `use_buf_len`: fetch (capacity = iov_buf_len) vs update (data = iov_len).
    unsafe fn new(sgl: *const d_sg_list_t, use_buf_len: bool) -> Cursor<'a> {
        // SAFETY: the caller keeps this function's `# Safety` contract, which is all the operations
        // below need.
        unsafe {
            let sgl = &*sgl;
            let iovs =
                if sgl.sg_iovs.is_null() { &[][..] } else { slice::from_raw_parts(sgl.sg_iovs, sgl.sg_nr as usize) };
            Cursor { iovs, use_buf_len, i: 0, off: 0, pos: 0 }
        }
    }

    /// The current iov, skipping empty ones (and NULL buffers): (base, length).
    #[inline]
    fn seg(&mut self) -> Option<(*mut u8, usize)> {
        while let Some(iov) = self.iovs.get(self.i) {
            let len = if self.use_buf_len { iov.iov_buf_len } else { iov.iov_len };
            if len > 0 && !iov.iov_buf.is_null() {
                return Some((iov.iov_buf as *mut u8, len));
            }
            self.i += 1;
        }
        None
    }

    fn skip_to(&mut self, target: u64) {
        while self.pos < target {
            let Some((_, len)) = self.seg() else { return };
            let left = len - self.off;
            let want = target - self.pos;
            if want < left as u64 {
                self.off += want as usize;
                self.pos = target;
            } else {
                self.pos += left as u64;
                self.i += 1;
                self.off = 0;
            }
        }
    }

    /// The next contiguous piece of at most `max` bytes.
    #[inline]
    fn piece(&mut self, max: usize) -> Option<(*mut u8, usize)> {
        let (p, len) = self.seg()?;
        let k = (len - self.off).min(max);
        // SAFETY: `off` is within the segment's `len` bytes (checked when it advances).
        let ptr = unsafe { p.add(self.off) };
        self.off += k;
        self.pos += k as u64;
        if self.off == len {
            self.i += 1;
            self.off = 0;
        }
        Some((ptr, k))
    }

    /// Source slice for a write of up to `max` bytes (zeros if the sgl ran short, which
    /// validation rules out unless the caller changed it meanwhile).
    fn src<'b>(&mut self, max: usize) -> &'b [u8] {
        match self.piece(max) {
            // SAFETY: `k` readable bytes of the caller's buffer, alive for the operation.
            Some((p, k)) => unsafe { slice::from_raw_parts(p, k) },
            None => &ZEROS[..max.min(ZEROS.len())],
        }
    }

    /// Copies `src` into the sgl at the cursor.
    fn scatter(&mut self, mut src: &[u8]) {
        let copy = copying(); // `copy off`: the cursor still walks the sgl, no byte moves
        while !src.is_empty() {
            let Some((p, k)) = self.piece(src.len()) else { return };
            if copy {
                // SAFETY: `piece` returns `k` writable bytes of a caller's sgl buffer, and `src` has `k`.
                unsafe { copy_raw(p, src.as_ptr(), k) };
            }
            src = &src[k..];
        }
    }
}

/// Fetch write-back of `sg_nr_out` and each `iov_len` for `data` bytes of output.
unsafe fn set_sgl_out(sgl: *mut d_sg_list_t, mut data: u64) {
    // SAFETY: the caller keeps this function's `# Safety` contract, which is all the operations
    // below need.
    unsafe {
        let sgl = &mut *sgl;
        let mut nr_out = 0;
        if !sgl.sg_iovs.is_null() {
            for (i, iov) in slice::from_raw_parts_mut(sgl.sg_iovs, sgl.sg_nr as usize).iter_mut().enumerate() {
                if data == 0 {
                    iov.iov_len = 0;
                    continue;
                }
                let l = (iov.iov_buf_len as u64).min(data);
                iov.iov_len = l as usize;
                data -= l;
                nr_out = i as u32 + 1;
            }
        }
        sgl.sg_nr_out = nr_out;
    }
}

/// A key's bytes, validated: non-NULL, non-empty, 8 bytes for uint64 key types.
pub unsafe fn key<'a>(k: *const daos_key_t, u64key: bool) -> Result<&'a [u8], c_int> {
    // SAFETY: the caller keeps this function's `# Safety` contract, which is all the operations
    // below need.
    unsafe {
        if k.is_null() {
            return Err(-DER_INVAL);
        }
        let k = &*k;
        if k.iov_buf.is_null() || k.iov_len == 0 || (u64key && k.iov_len != 8) {
            return Err(-DER_INVAL);
        }
        Ok(slice::from_raw_parts(k.iov_buf as *const u8, k.iov_len))
    }
}

/// The akey an iod names (validated by `check_io`).
unsafe fn akey<'a>(iod: &daos_iod_t) -> &'a [u8] {
    // SAFETY: the caller keeps this function's `# Safety` contract, which is all the operations
    // below need.
    unsafe { slice::from_raw_parts(iod.iod_name.iov_buf as *const u8, iod.iod_name.iov_len) }
}

unsafe fn recxs<'a>(iod: &daos_iod_t) -> &'a [daos_recx_t] {
    // SAFETY: the caller keeps this function's `# Safety` contract, which is all the operations
    // below need.
    unsafe {
        if iod.iod_recxs.is_null() || iod.iod_nr == 0 {
            &[]
        } else {
            slice::from_raw_parts(iod.iod_recxs, iod.iod_nr as usize)
        }
    }
}

/// The recxs as runs of records [start, end): neighbours that are contiguous (each starting
/// where the previous one ends) merge into one run. Both the records and their bytes in the
/// packed sgl are then contiguous, so a run can be handled like one recx, with one lookup and
/// one interval update instead of one per recx.
fn runs(rs: &[daos_recx_t]) -> impl Iterator<Item = (u64, u64)> + '_ {
    let mut i = 0;
    std::iter::from_fn(move || {
        let first = rs.get(i)?;
        let (start, mut end) = (first.rx_idx, first.rx_idx + first.rx_nr);
        i += 1;
        while let Some(r) = rs.get(i).filter(|r| r.rx_idx == end) {
            end += r.rx_nr;
            i += 1;
        }
        Some((start, end))
    })
}

/// Recx checks: rx_nr > 0, index below 2^63, no overlap within the iod, and (for a non-zero
/// record size) every byte offset representable.
fn check_recxs(rs: &[daos_recx_t], size: u64) -> Result<u64, c_int> {
    const LIMIT: u64 = 1 << 63;
    let mut total: u64 = 0;
    let mut sorted = true;
    let mut prev_end = 0;
    for (i, r) in rs.iter().enumerate() {
        if r.rx_nr == 0 || r.rx_idx >= LIMIT {
            return Err(-DER_INVAL);
        }
        let end = r.rx_idx.checked_add(r.rx_nr).filter(|&e| e <= LIMIT).ok_or(-DER_INVAL)?;
        if size != 0 && end.checked_mul(size).is_none() {
            return Err(-DER_INVAL);
        }
        if i > 0 && r.rx_idx < prev_end {
            sorted = false;
        }
        prev_end = end;
        total = total.saturating_add(r.rx_nr);
    }
    if !sorted {
        let mut v: Vec<(u64, u64)> = rs.iter().map(|r| (r.rx_idx, r.rx_idx + r.rx_nr)).collect();
        v.sort_unstable();
        if v.windows(2).any(|w| w[1].0 < w[0].1) {
            return Err(-DER_INVAL);
        }
    }
    Ok(total)
}

/// What a validated update/fetch will move, for counters and the bandwidth model.
pub struct Checked {
    pub bytes: u64,
    pub recxs: u64,
}

/// Client-side validation of update/fetch, in DAOS order; errors are -DER_* codes.
///
/// # Safety
/// Pointers as passed to `daos_obj_update` / `daos_obj_fetch`.
pub unsafe fn check_io(
    o: &ObjH,
    flags: u64,
    dkey: *const daos_key_t,
    nr: u32,
    iods: *const daos_iod_t,
    sgls: *const d_sg_list_t,
    update: bool,
) -> Result<Checked, c_int> {
    // SAFETY: the caller keeps this function's `# Safety` contract, which is all the operations
    // below need.
    unsafe {
        if update && !o.writable {
            return Err(-DER_NO_PERM);
        }
        let bad_flags = if update {
            DAOS_COND_PUNCH | DAOS_COND_DKEY_FETCH | DAOS_COND_AKEY_FETCH
        } else {
            DAOS_COND_PUNCH
                | DAOS_COND_DKEY_INSERT
                | DAOS_COND_DKEY_UPDATE
                | DAOS_COND_AKEY_INSERT
                | DAOS_COND_AKEY_UPDATE
        };
        if flags & bad_flags != 0
            || (flags & DAOS_COND_PER_AKEY != 0
                && flags & (DAOS_COND_AKEY_INSERT | DAOS_COND_AKEY_UPDATE | DAOS_COND_AKEY_FETCH) != 0)
            || (flags & DAOS_COND_DKEY_INSERT != 0 && flags & DAOS_COND_DKEY_UPDATE != 0)
            || (flags & DAOS_COND_AKEY_INSERT != 0 && flags & DAOS_COND_AKEY_UPDATE != 0)
        {
            return Err(-DER_INVAL);
        }
        key(dkey, o.dkey_u64())?;
        if nr == 0 || iods.is_null() {
            return Err(-DER_INVAL);
        }
        let iods = slice::from_raw_parts(iods, nr as usize);
        let mut caps = Vec::with_capacity(if sgls.is_null() { 0 } else { iods.len() });
        let mut nrecs = Vec::with_capacity(iods.len());
        let mut n_recx = 0;
        for (i, iod) in iods.iter().enumerate() {
            key(&iod.iod_name, o.akey_u64())?;
            let recs = match iod.iod_type {
                DAOS_IOD_SINGLE => {
                    if iod.iod_nr != 1 {
                        return Err(-DER_INVAL);
                    }
                    1
                }
                DAOS_IOD_ARRAY => {
                    if iod.iod_nr > 0 && iod.iod_recxs.is_null() {
                        return Err(-DER_INVAL);
                    }
                    if iod.iod_nr == 0 && !sgls.is_null() {
                        return Err(-DER_INVAL);
                    }
                    n_recx += iod.iod_nr as u64;
                    check_recxs(recxs(iod), iod.iod_size)?
                }
                _ => return Err(-DER_INVAL),
            };
            nrecs.push(recs);
            if sgls.is_null() {
                let ok = if update {
                    iod.iod_size == 0
                } else {
                    iod.iod_type == DAOS_IOD_SINGLE || iod.iod_size == DAOS_REC_ANY
                };
                if !ok {
                    return Err(-DER_INVAL);
                }
                continue;
            }
            let sgl = &*sgls.add(i);
            if sgl.sg_nr > 0 && sgl.sg_iovs.is_null() {
                return Err(-DER_INVAL);
            }
            let mut cap: u64 = 0;
            if sgl.sg_nr > 0 {
                for iov in slice::from_raw_parts(sgl.sg_iovs, sgl.sg_nr as usize) {
                    if (iov.iov_buf_len > 0 && iov.iov_buf.is_null()) || iov.iov_len > iov.iov_buf_len {
                        return Err(-DER_INVAL);
                    }
                    cap += if update { iov.iov_len } else { iov.iov_buf_len } as u64;
                }
            }
            if cap == 0 && iod.iod_size != DAOS_REC_ANY {
                return Err(-DER_INVAL);
            }
            caps.push(cap);
        }
        // REC2BIG: the buffers cannot hold what the iod describes.
        let mut bytes: u64 = 0;
        for (i, iod) in iods.iter().enumerate() {
            let need = iod.iod_size.checked_mul(nrecs[i]);
            if !sgls.is_null() && iod.iod_size != 0 && need.is_none_or(|n| n > caps[i]) {
                return Err(-DER_REC2BIG);
            }
            bytes = bytes.saturating_add(match (need, caps.get(i)) {
                (Some(0), Some(&c)) if !update => c,
                (Some(n), _) => n,
                _ => 0,
            });
        }
        Ok(Checked { bytes, recxs: n_recx })
    }
}

fn akey_flags(flags: u64, iod: &daos_iod_t) -> u64 {
    if flags & DAOS_COND_PER_AKEY != 0 {
        iod.iod_flags
    } else {
        flags
    }
}

/// Server side of an update (already validated). Atomic per dkey.
///
/// # Safety
/// As for `check_io`, which must have succeeded on the same arguments.
pub unsafe fn exec_update(
    o: &ObjH,
    flags: u64,
    dkey: *const daos_key_t,
    nr: u32,
    iods: *const daos_iod_t,
    sgls: *const d_sg_list_t,
) -> c_int {
    // SAFETY: the caller keeps this function's `# Safety` contract, which is all the operations
    // below need.
    unsafe {
        let Ok(dk) = key(dkey, o.dkey_u64()) else { return -DER_INVAL };
        let iods = slice::from_raw_parts(iods, nr as usize);
        let data = o.data();
        loop {
            let d = data.dkey_or_insert(dk);
            let mut g = d.write();
            if g.dead {
                continue;
            }
            let exists = !g.akeys.is_empty();
            if flags & DAOS_COND_DKEY_INSERT != 0 && exists {
                return -DER_EXIST;
            }
            if flags & DAOS_COND_DKEY_UPDATE != 0 && !exists {
                return -DER_NONEXIST;
            }
            for iod in iods {
                let ak = akey(iod);
                let cur = g.akeys.get(ak);
                let af = akey_flags(flags, iod);
                if af & DAOS_COND_AKEY_INSERT != 0 && cur.is_some() {
                    return -DER_EXIST;
                }
                if af & DAOS_COND_AKEY_UPDATE != 0 && cur.is_none() {
                    return -DER_NONEXIST;
                }
                match (iod.iod_type, cur) {
                    (DAOS_IOD_SINGLE, Some(AkeyVal::Array(_))) | (DAOS_IOD_ARRAY, Some(AkeyVal::Single(_))) => {
                        tracing::warn!("update: akey value type differs from its first update");
                        return -DER_INVAL;
                    }
                    _ => {}
                }
            }
            // Pool space: a full pool refuses the whole update and writes nothing. What the
            // update may newly take is at most its bytes (an overwrite in place takes none).
            let space = &o.coh.poh.pool.space;
            let incoming: u64 = iods.iter().map(|iod| new_bytes(&g, iod)).sum();
            if !space.fits(incoming) {
                return -DER_NOSPACE;
            }
            let before = held_bytes(&g, iods);
            let (mut bytes, mut single) = (0, 0);
            for (i, iod) in iods.iter().enumerate() {
                let sgl = if sgls.is_null() { std::ptr::null() } else { sgls.add(i) };
                let n = apply_update(&mut g, iod, sgl);
                if iod.iod_type == DAOS_IOD_SINGLE {
                    single += n;
                } else {
                    bytes += n;
                }
            }
            STATS.single_bytes_written.fetch_add(single, Relaxed);
            space.account(before, held_bytes(&g, iods));
            // From one counter for every dkey: a dkey punched and written again never comes
            // back with a version a transaction recorded.
            g.version = crate::store::next_version();
            STATS.bytes_written.fetch_add(bytes, Relaxed);
            return 0;
        }
    }
}

/// Bytes an update of `iod` newly takes: records not written before (an overwrite in place
/// takes none here; see `space`), a single value's growth; 0 for a punch (`iod_size == 0`).
///
/// # Safety
/// `iod` passed `check_io`.
unsafe fn new_bytes(g: &DkeyData, iod: &daos_iod_t) -> u64 {
    // SAFETY: the iod was validated (`check_io`), so its akey and recxs are readable.
    let (ak, rs) = unsafe { (akey(iod), recxs(iod)) };
    let size = iod.iod_size;
    match (iod.iod_type, g.akeys.get(ak)) {
        (DAOS_IOD_SINGLE, Some(AkeyVal::Single(v))) => size.saturating_sub(v.len() as u64),
        (DAOS_IOD_SINGLE, _) => size,
        (_, Some(AkeyVal::Array(a))) => runs(rs)
            .map(|(start, end)| {
                let covered: u64 = a.overlapping(start, end).map(|(s, e, _)| e - s).sum();
                (end - start - covered.min(end - start)).saturating_mul(size)
            })
            .sum(),
        _ => rs.iter().map(|r| r.rx_nr.saturating_mul(size)).sum(),
    }
}

/// Storage bytes held by the akeys `iods` name (what pool space counts for them).
///
/// # Safety
/// The iods passed `check_io`.
unsafe fn held_bytes(g: &DkeyData, iods: &[daos_iod_t]) -> u64 {
    // SAFETY: validated iods, so their akey buffers are readable.
    iods.iter().filter_map(|iod| g.akeys.get(unsafe { akey(iod) })).map(AkeyVal::bytes_held).sum()
}

unsafe fn apply_update(g: &mut DkeyData, iod: &daos_iod_t, sgl: *const d_sg_list_t) -> u64 {
    // SAFETY: the caller keeps this function's `# Safety` contract, which is all the operations
    // below need.
    unsafe {
        let ak = akey(iod);
        let size = iod.iod_size;
        if size == 0 {
            // Punch.
            if iod.iod_type == DAOS_IOD_SINGLE {
                g.akeys.remove(ak);
            } else if let Some(AkeyVal::Array(a)) = g.akeys.get_mut(ak) {
                for r in recxs(iod) {
                    a.punch(r.rx_idx, r.rx_idx + r.rx_nr);
                }
                if a.is_empty() {
                    g.akeys.remove(ak);
                }
            }
            return 0;
        }
        let mut cur = Cursor::new(sgl, false);
        if iod.iod_type == DAOS_IOD_SINGLE {
            let n = size as usize;
            // With copies off (`copy off`) no copy initialises the value: start from zeros.
            let copy = copying();
            let mut v: Vec<u8> = if copy { Vec::with_capacity(n) } else { vec![0; n] };
            let mut got = 0;
            while got < n {
                let s = cur.src(n - got);
                let k = s.len().min(n - got);
                if copy {
                    copy_raw(v.as_mut_ptr().add(got), s.as_ptr(), k);
                }
                got += k;
            }
            if copy {
                v.set_len(n); // the copies above initialised [0, n)
            }
            g.akeys.insert(ak.into(), AkeyVal::Single(v));
            return size;
        }
        let val = match g.akeys.get_mut(ak) {
            Some(v) => v,
            None => g.akeys.entry(ak.into()).or_insert_with(|| AkeyVal::Array(Default::default())),
        };
        let AkeyVal::Array(a) = val else { return 0 };
        let mut bytes = 0;
        for (start, end) in runs(recxs(iod)) {
            let n = (end - start) * size;
            a.layer_mut(size).write_with(start * size, n, |want| cur.src(want));
            a.mark_written(start, end, size);
            bytes += n;
        }
        bytes
    }
}

/// Server side of a fetch plus the transfer into the caller's buffers.
///
/// # Safety
/// As for `check_io`, which must have succeeded on the same arguments.
pub unsafe fn exec_fetch(
    o: &ObjH,
    flags: u64,
    dkey: *const daos_key_t,
    nr: u32,
    iods: *mut daos_iod_t,
    sgls: *mut d_sg_list_t,
) -> c_int {
    // SAFETY: the caller keeps this function's `# Safety` contract, which is all the operations
    // below need.
    unsafe {
        let Ok(dk) = key(dkey, o.dkey_u64()) else { return -DER_INVAL };
        let iods = slice::from_raw_parts_mut(iods, nr as usize);
        let d = o.data_if_any().and_then(|data| data.dkey(dk));
        let guard = d.as_ref().map(|d| d.read());
        let dkd: Option<&DkeyData> = guard.as_deref().filter(|g| !g.dead && !g.akeys.is_empty());
        if flags & DAOS_COND_DKEY_FETCH != 0 && dkd.is_none() {
            return -DER_NONEXIST;
        }
        // Pass 1: find each iod's value and stored record size, and check conditions and buffer
        // sizes.
        let mut found = Vec::with_capacity(iods.len());
        let mut rec2big = false;
        for (i, iod) in iods.iter().enumerate() {
            let ak = akey(iod);
            let val = dkd.and_then(|g| g.akeys.get(ak));
            if akey_flags(flags, iod) & DAOS_COND_AKEY_FETCH != 0 && val.is_none() {
                return -DER_NONEXIST;
            }
            let (size, need) = match (iod.iod_type, val) {
                (_, None) => (0, 0),
                (DAOS_IOD_SINGLE, Some(AkeyVal::Single(v))) => (v.len() as u64, v.len() as u64),
                (DAOS_IOD_ARRAY, Some(AkeyVal::Array(a))) => {
                    let mut r = 0;
                    let mut total = 0u64;
                    for (start, end) in runs(recxs(iod)) {
                        for (_, _, rs) in a.overlapping(start, end) {
                            if r == 0 {
                                r = rs;
                            } else if r != rs {
                                tracing::warn!("fetch: mixed record sizes in the fetched range");
                                return -DER_INVAL;
                            }
                        }
                        total = total.saturating_add(end - start);
                    }
                    (r, r.saturating_mul(total))
                }
                _ => {
                    tracing::warn!("fetch: iod type differs from the akey's value type");
                    return -DER_INVAL;
                }
            };
            if !sgls.is_null() && need > 0 {
                let sgl = &*sgls.add(i);
                let cap: u64 = if sgl.sg_iovs.is_null() {
                    0
                } else {
                    slice::from_raw_parts(sgl.sg_iovs, sgl.sg_nr as usize).iter().map(|v| v.iov_buf_len as u64).sum()
                };
                if need > cap {
                    rec2big = true;
                }
            }
            // Nothing to transfer when no record is found.
            found.push((size, val.filter(|_| size != 0)));
        }
        for (iod, &(size, _)) in iods.iter_mut().zip(&found) {
            iod.iod_size = size;
        }
        if rec2big {
            return -DER_REC2BIG;
        }
        if sgls.is_null() {
            return 0;
        }
        // Pass 2: transfer.
        let mut bytes = 0u64;
        for (i, iod) in iods.iter().enumerate() {
            let sgl = sgls.add(i);
            let (size, val) = found[i];
            let mut cur = Cursor::new(sgl, true);
            let out = match val {
                None => 0,
                Some(AkeyVal::Single(v)) => {
                    cur.scatter(v);
                    bytes += v.len() as u64;
                    v.len() as u64
                }
                Some(AkeyVal::Array(a)) => {
                    let layer = a.layer(size);
                    let mut base = 0u64;
                    let mut last_end = 0u64;
                    for (start, end) in runs(recxs(iod)) {
                        for (s, e, _) in a.overlapping(start, end) {
                            cur.skip_to(base + (s - start) * size);
                            let n = (e - s) * size;
                            if let Some(l) = layer {
                                l.read_with(s * size, n, |src| cur.scatter(src));
                            }
                            bytes += n;
                            last_end = base + (e - start) * size;
                        }
                        base += (end - start) * size;
                    }
                    last_end
                }
            };
            set_sgl_out(sgl, out);
        }
        STATS.bytes_read.fetch_add(bytes, Relaxed);
        0
    }
}

// ---------------------------------------------------------------------------------------------
// Punch

pub enum PunchWhat {
    Obj,
    Dkey,
    Akeys(u32),
}

/// Validation of the punch calls (the dkey count check happens in the API, before any task).
///
/// # Safety
/// Pointers as passed to the daos_obj_punch* calls.
pub unsafe fn check_punch(
    o: &ObjH,
    what: &PunchWhat,
    dkey: *const daos_key_t,
    akeys: *const daos_key_t,
) -> Result<(), c_int> {
    // SAFETY: the caller keeps this function's `# Safety` contract, which is all the operations
    // below need.
    unsafe {
        if !o.writable {
            return Err(-DER_NO_PERM);
        }
        match *what {
            PunchWhat::Obj => Ok(()),
            PunchWhat::Dkey => key(dkey, o.dkey_u64()).map(|_| ()),
            PunchWhat::Akeys(n) => {
                key(dkey, o.dkey_u64())?;
                if n == 0 || akeys.is_null() {
                    return Err(-DER_INVAL);
                }
                for i in 0..n as usize {
                    key(akeys.add(i), o.akey_u64())?;
                }
                Ok(())
            }
        }
    }
}

/// # Safety
/// As for `check_punch`, which must have succeeded on the same arguments.
pub unsafe fn exec_punch(
    o: &ObjH,
    flags: u64,
    what: &PunchWhat,
    dkey: *const daos_key_t,
    akeys: *const daos_key_t,
) -> c_int {
    // SAFETY: the caller keeps this function's `# Safety` contract, which is all the operations
    // below need.
    unsafe {
        let cond = flags & DAOS_COND_PUNCH != 0;
        match *what {
            PunchWhat::Obj => {
                let had = o.data_if_any().is_some_and(|d| d.clear());
                if cond && !had {
                    return -DER_NONEXIST;
                }
                0
            }
            PunchWhat::Dkey => {
                let Ok(dk) = key(dkey, o.dkey_u64()) else { return -DER_INVAL };
                let (had, held) = o.data_if_any().map_or((false, 0), |d| d.remove_dkey(dk));
                o.coh.poh.pool.space.punched(held);
                if cond && !had {
                    return -DER_NONEXIST;
                }
                0
            }
            PunchWhat::Akeys(n) => {
                let Ok(dk) = key(dkey, o.dkey_u64()) else { return -DER_INVAL };
                let Some(d) = o.data_if_any().and_then(|data| data.dkey(dk)) else {
                    return if cond { -DER_NONEXIST } else { 0 };
                };
                let mut g = d.write();
                let aks: Vec<&[u8]> = (0..n as usize).filter_map(|i| key(akeys.add(i), o.akey_u64()).ok()).collect();
                if cond && (g.dead || aks.iter().any(|a| !g.akeys.contains_key(*a))) {
                    return -DER_NONEXIST;
                }
                for a in aks {
                    g.akeys.remove(a);
                }
                0
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Query key

/// Validation of `daos_obj_query_key`.
///
/// # Safety
/// Pointers as passed to `daos_obj_query_key`.
pub unsafe fn check_query(
    o: &ObjH,
    flags: u64,
    dkey: *const daos_key_t,
    akey: *const daos_key_t,
    recx: *const daos_recx_t,
) -> Result<(), c_int> {
    // SAFETY: the caller keeps this function's `# Safety` contract, which is all the operations
    // below need.
    unsafe {
        let max = flags & DAOS_GET_MAX != 0;
        let min = flags & DAOS_GET_MIN != 0;
        let what = flags & (DAOS_GET_DKEY | DAOS_GET_AKEY | DAOS_GET_RECX);
        if max == min || what == 0 {
            return Err(-DER_INVAL);
        }
        if flags & DAOS_GET_DKEY != 0 && !o.dkey_u64() {
            return Err(-DER_INVAL);
        }
        if flags & DAOS_GET_AKEY != 0 && !o.akey_u64() {
            return Err(-DER_INVAL);
        }
        if dkey.is_null() {
            return Err(-DER_INVAL);
        }
        query_key_arg(dkey, flags & DAOS_GET_DKEY != 0, o.dkey_u64())?;
        if flags & (DAOS_GET_AKEY | DAOS_GET_RECX) != 0 {
            if akey.is_null() {
                return Err(-DER_INVAL);
            }
            query_key_arg(akey, flags & DAOS_GET_AKEY != 0, o.akey_u64())?;
        }
        if flags & DAOS_GET_RECX != 0 && recx.is_null() {
            return Err(-DER_INVAL);
        }
        Ok(())
    }
}

/// A query_key key argument: an output (room for a u64) or a valid input key.
unsafe fn query_key_arg(k: *const daos_key_t, out: bool, u64key: bool) -> Result<(), c_int> {
    // SAFETY: the caller keeps this function's `# Safety` contract, which is all the operations
    // below need.
    unsafe {
        if out {
            if (*k).iov_buf.is_null() || (*k).iov_buf_len < 8 {
                return Err(-DER_INVAL);
            }
            Ok(())
        } else {
            key(k, u64key).map(|_| ())
        }
    }
}

fn u64_key(k: &[u8]) -> Option<u64> {
    k.try_into().ok().map(u64::from_ne_bytes)
}

unsafe fn put_u64_key(k: *mut daos_key_t, v: u64) {
    // SAFETY: the caller keeps this function's `# Safety` contract, which is all the operations
    // below need.
    unsafe {
        std::ptr::copy_nonoverlapping(v.to_ne_bytes().as_ptr(), (*k).iov_buf as *mut u8, 8);
        (*k).iov_len = 8;
    }
}

/// Runs a query as DAOS 2.8 answers it: a key (or object) that does not exist is not an error.
/// Each server shard replies `-DER_NONEXIST`, and the client's merge of the replies
/// (`daos_obj_query_merge`) turns that into success, leaving the outputs as they were set
/// before the query was sent: the recx zeroed, a `GET_DKEY` dkey with `iov_len` 0. So a
/// caller sees rc 0 and `rx_nr == 0` for a never-written key, never `-DER_NONEXIST`.
///
/// # Safety
/// As for `check_query`, which must have succeeded on the same arguments.
pub unsafe fn exec_query(
    o: &ObjH,
    flags: u64,
    dkey: *mut daos_key_t,
    akey: *mut daos_key_t,
    recx: *mut daos_recx_t,
) -> c_int {
    // SAFETY: the caller keeps this function's `# Safety` contract, which is all the operations
    // below need.
    unsafe {
        match find_query(o, flags, dkey, akey, recx) {
            rc if rc == -DER_NONEXIST => 0,
            rc => rc,
        }
    }
}

/// What `daos_obj_query_key` does to its recx when called, before any validation or RPC (DAOS's
/// `dc_obj_query_key` zeroes it first, so even a rejected query leaves it zeroed).
///
/// # Safety
/// `recx` as passed to `daos_obj_query_key` (may be null).
pub unsafe fn reset_query_recx(recx: *mut daos_recx_t) {
    // SAFETY: the caller keeps this function's `# Safety` contract, which is all the operations
    // below need.
    unsafe {
        if !recx.is_null() {
            *recx = daos_recx_t::default();
        }
    }
}

/// A `GET_DKEY` query's dkey gets `iov_len` 0 once the arguments are valid, before the RPC, so
/// that an object with no dkey leaves it empty.
///
/// # Safety
/// As for `check_query`, which must have succeeded on the same arguments.
pub unsafe fn reset_query_dkey(flags: u64, dkey: *mut daos_key_t) {
    // SAFETY: the caller keeps this function's `# Safety` contract, which is all the operations
    // below need.
    unsafe {
        if flags & DAOS_GET_DKEY != 0 {
            (*dkey).iov_len = 0;
        }
    }
}

/// The query itself; `-DER_NONEXIST` where the key, akey or extent is absent.
unsafe fn find_query(
    o: &ObjH,
    flags: u64,
    dkey: *mut daos_key_t,
    akey: *mut daos_key_t,
    recx: *mut daos_recx_t,
) -> c_int {
    // SAFETY: the caller keeps this function's `# Safety` contract, which is all the operations
    // below need.
    unsafe {
        let max = flags & DAOS_GET_MAX != 0;
        let Some(data) = o.data_if_any() else { return -DER_NONEXIST };
        let d = if flags & DAOS_GET_DKEY != 0 {
            let all: Vec<(u64, crate::store::DkeyRef)> =
                data.dkeys.read().iter().filter_map(|(k, d)| u64_key(k).map(|v| (v, d.clone()))).collect();
            let best = all
                .into_iter()
                .filter(|(_, d)| {
                    let g = d.read();
                    !g.dead && !g.akeys.is_empty()
                })
                .reduce(|a, b| if (b.0 > a.0) == max { b } else { a });
            let Some((v, d)) = best else { return -DER_NONEXIST };
            put_u64_key(dkey, v);
            d
        } else {
            let Ok(dk) = key(dkey, o.dkey_u64()) else { return -DER_INVAL };
            match data.dkey(dk) {
                Some(d) => d,
                None => return -DER_NONEXIST,
            }
        };
        let g = d.read();
        if g.dead || g.akeys.is_empty() {
            return -DER_NONEXIST;
        }
        if flags & (DAOS_GET_AKEY | DAOS_GET_RECX) == 0 {
            return 0;
        }
        let val = if flags & DAOS_GET_AKEY != 0 {
            let best = g.akeys.iter().filter_map(|(k, v)| u64_key(k).map(|x| (x, v))).reduce(|a, b| {
                if (b.0 > a.0) == max {
                    b
                } else {
                    a
                }
            });
            let Some((x, v)) = best else { return -DER_NONEXIST };
            put_u64_key(akey, x);
            v
        } else {
            let Ok(ak) = key(akey, o.akey_u64()) else { return -DER_INVAL };
            match g.akeys.get(ak) {
                Some(v) => v,
                None => return -DER_NONEXIST,
            }
        };
        if flags & DAOS_GET_RECX != 0 {
            let AkeyVal::Array(a) = val else { return -DER_NONEXIST };
            let Some((s, e)) = a.extent(max) else { return -DER_NONEXIST };
            *recx = daos_recx_t { rx_idx: s, rx_nr: e - s };
        }
        0
    }
}
