// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//! One object I/O as DAOS sees it: the dkey, one byte-array akey (`iod_size = 1`), its recxs
//! and the matching scatter-gather list. `IoDesc` owns (or, for the keys, shares) every array
//! DAOS points into; the pointers are set at launch, once the descriptor sits at its final
//! address.

use std::ptr::addr_of_mut;

use super::{d_iov_t, d_sg_list_t, daos_event_t, daos_iod_t, daos_recx_t};
use super::{iov, sys, Library, Object};
use crate::key::ObjectKey;

/// The akey under which a key's bytes live (a byte array: one record per byte).
pub const DATA_AKEY: &[u8] = b"data";

/// Single-value akey beside the data: the id of the write that stored the key last (8 bytes,
/// little endian), written in the same RPC as the data by every update. Eviction punches a
/// key only while it still holds the id its index record names, so a key rewritten since is
/// kept (see `crate::evict`). Readers that do not know it (earlier versions) ignore it.
pub const GEN_AKEY: &[u8] = b"gen";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoKind {
    /// Write the ranges (`daos_obj_update`).
    Update,
    /// Read the ranges (`daos_obj_fetch`).
    Fetch,
    /// Highest written record of the key (`daos_obj_query_key` MAX|RECX): its size.
    Size,
    /// Remove the key and everything under it (`daos_obj_punch_dkeys`, one dkey).
    Punch,
}

/// One range of the object and the local buffer it moves to or from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extent {
    pub offset: u64,
    pub len: u64,
    pub addr: u64,
}

pub struct IoDesc {
    pub kind: IoKind,
    dkey: ObjectKey,
    dkey_iov: d_iov_t,
    akey_iov: d_iov_t,
    /// The data iod, and the write id's (updates with a `gen` only).
    iods: [daos_iod_t; 2],
    recxs: Vec<daos_recx_t>,
    iovs: Vec<d_iov_t>,
    sgls: [d_sg_list_t; 2],
    gen: Option<[u8; 8]>,
    gen_akey_iov: d_iov_t,
    gen_iov: d_iov_t,
    query: daos_recx_t,
    want: u64,
    /// A staged fetch: DAOS reads into this buffer of the engine's, and `deliver` copies it
    /// into the caller's (`user`) once it succeeded. Used while the pool is in trouble, so that
    /// a read reported failed leaves nothing of DAOS's in the caller's memory.
    bounce: Option<crate::bounce::Bounce>,
    user: Vec<(u64, u64)>,
}

// SAFETY: the raw pointers inside point to memory this struct owns or to user buffers whose
// lifetime the transfer contract guarantees; the struct is handed between threads whole.
unsafe impl Send for IoDesc {}

impl IoDesc {
    /// `gen`: the write id an update stores beside the data (`GEN_AKEY`); ignored for fetches
    /// and queries.
    pub fn new(kind: IoKind, dkey: ObjectKey, extents: &[Extent], gen: Option<u64>) -> IoDesc {
        let recxs = extents.iter().map(|e| daos_recx_t { rx_idx: e.offset, rx_nr: e.len }).collect();
        let iovs = extents.iter().map(|e| iov(e.addr as *mut u8, e.len as usize)).collect();
        IoDesc {
            kind,
            dkey,
            dkey_iov: iov(std::ptr::null_mut(), 0),
            akey_iov: iov(std::ptr::null_mut(), 0),
            iods: [daos_iod_t::default(); 2],
            recxs,
            iovs,
            sgls: [d_sg_list_t::default(); 2],
            gen: gen.filter(|_| kind == IoKind::Update).map(u64::to_le_bytes),
            gen_akey_iov: iov(std::ptr::null_mut(), 0),
            gen_iov: iov(std::ptr::null_mut(), 0),
            query: daos_recx_t::default(),
            want: extents.iter().map(|e| e.len).sum(),
            bounce: None,
            user: Vec::new(),
        }
    }

    /// A fetch into a buffer of `pool`'s (see `bounce`); other kinds are not staged.
    pub fn new_staged(dkey: ObjectKey, extents: &[Extent], pool: &std::sync::Arc<crate::bounce::BouncePool>) -> IoDesc {
        let mut io = IoDesc::new(IoKind::Fetch, dkey, extents, None);
        let mut bounce = pool.take(io.want as usize);
        let base = bounce.as_mut_ptr();
        let mut at = 0usize;
        // The iovs point into the bounce buffer's heap allocation, which does not move when
        // the buffer (or the IoDesc) is moved, and goes back to the pool only with the IoDesc.
        io.iovs = extents
            .iter()
            .map(|e| {
                // SAFETY: `at + e.len` is at most `want`, the buffer's length.
                let v = iov(unsafe { base.add(at) }, e.len as usize);
                at += e.len as usize;
                v
            })
            .collect();
        io.user = extents.iter().map(|e| (e.addr, e.len)).collect();
        io.bounce = Some(bounce);
        io
    }

    pub fn staged(&self) -> bool {
        self.bounce.is_some()
    }

    /// Copies a staged fetch's bytes into the caller's buffers.
    ///
    /// # Safety
    /// The fetch completed successfully, and the caller's buffers are still theirs to write
    /// (the transfer was not given up: `Attempt::complete_delivered`).
    pub unsafe fn deliver(&self) {
        let Some(b) = &self.bounce else { return };
        let b = b.as_slice();
        let mut at = 0usize;
        for &(addr, len) in &self.user {
            // SAFETY: `addr..addr+len` is a caller's DRAM range of this transfer (valid for
            // writes by the transfer contract, this function's contract), and the bounce
            // buffer holds `len` bytes from `at`; the two never overlap.
            unsafe { std::ptr::copy_nonoverlapping(b.as_ptr().add(at), addr as *mut u8, len as usize) };
            at += len as usize;
        }
    }

    /// The NIXL key this I/O addresses (its dkey).
    pub fn key(&self) -> &ObjectKey {
        &self.dkey
    }

    /// Bytes this I/O moves.
    pub fn bytes(&self) -> u64 {
        self.want
    }

    /// After a fetch: bytes DAOS returned, None when the key (or every range) is absent.
    /// Tail holes are trimmed by DAOS, so a short read shows as fewer bytes than asked.
    pub fn fetched(&self) -> Option<u64> {
        if self.iods[0].iod_size == 0 {
            return None;
        }
        let n = (self.sgls[0].sg_nr_out as usize).min(self.iovs.len());
        Some(self.iovs[..n].iter().map(|v| v.iov_len as u64).sum())
    }

    /// After a successful size query: the key's size in bytes, None when DAOS found no extent
    /// (`rx_nr == 0`: DAOS zeroes the recx before querying and leaves it so for a missing key).
    pub fn size(&self) -> Option<u64> {
        (self.query.rx_nr != 0).then(|| self.query.rx_idx + self.query.rx_nr)
    }

    fn wire(&mut self) {
        // DAOS only reads key buffers, so shared (immutable) bytes can back both iovs.
        let dkey = self.dkey.as_bytes();
        self.dkey_iov = iov(dkey.as_ptr().cast_mut(), dkey.len());
        self.akey_iov = iov(DATA_AKEY.as_ptr().cast_mut(), DATA_AKEY.len());
        self.iods[0] = daos_iod_t {
            iod_name: self.akey_iov,
            iod_type: sys::DAOS_IOD_ARRAY as _,
            iod_size: 1,
            iod_flags: 0,
            iod_nr: self.recxs.len() as u32,
            iod_recxs: self.recxs.as_mut_ptr(),
        };
        self.sgls[0] = d_sg_list_t { sg_nr: self.iovs.len() as u32, sg_nr_out: 0, sg_iovs: self.iovs.as_mut_ptr() };
        if let Some(g) = self.gen.as_mut() {
            self.gen_akey_iov = iov(GEN_AKEY.as_ptr().cast_mut(), GEN_AKEY.len());
            self.gen_iov = iov(g.as_mut_ptr(), g.len());
            self.iods[1] = daos_iod_t {
                iod_name: self.gen_akey_iov,
                iod_type: sys::DAOS_IOD_SINGLE as _,
                iod_size: g.len() as u64,
                iod_flags: 0,
                iod_nr: 1,
                iod_recxs: std::ptr::null_mut(),
            };
            self.sgls[1] = d_sg_list_t { sg_nr: 1, sg_nr_out: 0, sg_iovs: &mut self.gen_iov };
        }
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
    /// `io`, `ev` and the user buffers named by `io`'s extents must stay alive and unmoved
    /// until `ev` has been reaped from its queue.
    pub unsafe fn launch(&self, io: *mut IoDesc, ev: *mut daos_event_t) -> i32 {
        // SAFETY: `io` is valid and not yet launched (this function's contract), so nothing else
        // touches it while `wire` points its descriptors at its own fields.
        unsafe { (*io).wire() };
        let lib: &Library = self.lib;
        let th = sys::daos_handle_t::default();
        // SAFETY: field addresses of a valid `io`; no reference is created.
        let (dkey, iod, sgl, akey, query, kind, nr) = unsafe {
            (
                addr_of_mut!((*io).dkey_iov),
                addr_of_mut!((*io).iods).cast::<daos_iod_t>(),
                addr_of_mut!((*io).sgls).cast::<d_sg_list_t>(),
                addr_of_mut!((*io).akey_iov),
                addr_of_mut!((*io).query),
                (*io).kind,
                1 + u32::from((*io).gen.is_some()),
            )
        };
        match kind {
            // SAFETY: every pointer handed to DAOS stays valid and unmoved until `ev`
            // is reaped (this function's contract), which is what the asynchronous call needs.
            IoKind::Update => unsafe { lib.api.daos_obj_update(self.oh, th, 0, dkey, nr, iod, sgl, ev) },
            // SAFETY: as above.
            IoKind::Fetch => unsafe {
                lib.api.daos_obj_fetch(self.oh, th, 0, dkey, 1, iod, sgl, std::ptr::null_mut(), ev)
            },
            // SAFETY: as above.
            IoKind::Punch => unsafe { lib.api.daos_obj_punch_dkeys(self.oh, th, 0, 1, dkey, ev) },
            // SAFETY: as above.
            IoKind::Size => unsafe {
                lib.api.daos_obj_query_key(self.oh, th, sys::DAOS_GET_MAX | sys::DAOS_GET_RECX, dkey, akey, query, ev)
            },
        }
    }
}
