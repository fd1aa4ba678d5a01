// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//! Small blocking calls on single values, for the eviction index (`crate::evict`): put or punch
//! a few single-value akeys of one dkey, read them back, punch a dkey, and ask the pool for its
//! space. Each runs on an event of its own with a deadline (`Bound`), like the container calls
//! of `create_backend`: past it the call's state is left to DAOS (see `bounded`).
//!
//! None of this is on a transfer's path: the eviction thread alone calls these.

use super::{bounded, d_iov_t, d_sg_list_t, daos_handle_t, daos_iod_t, iov, sys, Bound, Container, Error, Library};
use super::{Object, Pool};

/// A DAOS transaction (`daos_tx_open`): reads and writes made with it happen at one epoch, and
/// its commit fails with `DER_TX_RESTART` when a conflicting update came between (DAOS's MVCC),
/// which is what lets eviction check a key and punch it without a rewrite slipping between.
/// Closed when dropped (`daos_tx_close` is local: no RPC).
pub struct Tx {
    lib: &'static Library,
    th: daos_handle_t,
}

impl Container {
    pub fn tx_open(&self, bound: Bound) -> Result<Tx, Error> {
        let (lib, coh) = (self.lib, self.coh);
        let th = bounded(lib, "daos_tx_open", bound, Box::new(daos_handle_t::default()), |th, ev| {
            // SAFETY: valid container handle; the out handle lives in bounded's state (a box).
            unsafe { lib.api.daos_tx_open(coh, &mut **th, 0, ev) }
        })?;
        Ok(Tx { lib, th: *th })
    }
}

impl Tx {
    /// Commits; `Err` with `is_tx_restart()` on a conflict (nothing was applied).
    pub fn commit(&self, bound: Bound) -> Result<(), Error> {
        let (lib, th) = (self.lib, self.th);
        // SAFETY: a handle from a successful open, not yet closed (self lives).
        bounded(lib, "daos_tx_commit", bound, (), |_, ev| unsafe { lib.api.daos_tx_commit(th, ev) }).map(|_| ())
    }
}

impl Drop for Tx {
    fn drop(&mut self) {
        // SAFETY: a handle from a successful open, closed once; a local call (NULL event).
        let rc = unsafe { self.lib.api.daos_tx_close(self.th, std::ptr::null_mut()) };
        if rc != 0 {
            tracing::debug!("daos_tx_close: {}", self.lib.errstr(rc));
        }
    }
}

fn th_of(tx: Option<&Tx>) -> daos_handle_t {
    tx.map_or_else(daos_handle_t::default, |t| t.th)
}

/// One single-value akey to write: `Some(bytes)` stores them, `None` punches the value.
pub type Put<'a> = (&'a [u8], Option<&'a [u8]>);

/// The descriptors of one call over single-value akeys of one dkey. Every array DAOS points
/// into is a heap block of this struct, so moving it (into `bounded`'s state) moves none of them.
struct Singles {
    dkey: Vec<u8>,
    dkey_iov: Box<d_iov_t>,
    akeys: Vec<Vec<u8>>,
    values: Vec<Vec<u8>>,
    iods: Vec<daos_iod_t>,
    iovs: Vec<d_iov_t>,
    sgls: Vec<d_sg_list_t>,
}

impl Singles {
    /// `sizes[i]`: the value size of akey i (0: punch on update, `DAOS_REC_ANY` on a size
    /// query); `values[i]`: its bytes (empty for a punch or a size query).
    fn new(dkey: &[u8], akeys: Vec<Vec<u8>>, values: Vec<Vec<u8>>, sizes: &[u64]) -> Singles {
        let mut s = Singles {
            dkey: dkey.to_vec(),
            dkey_iov: Box::new(iov(std::ptr::null_mut(), 0)),
            akeys,
            values,
            iods: Vec::new(),
            iovs: Vec::new(),
            sgls: Vec::new(),
        };
        *s.dkey_iov = iov(s.dkey.as_mut_ptr(), s.dkey.len());
        for (i, a) in s.akeys.iter_mut().enumerate() {
            s.iods.push(daos_iod_t {
                iod_name: iov(a.as_mut_ptr(), a.len()),
                iod_type: sys::DAOS_IOD_SINGLE as _,
                iod_size: sizes[i],
                iod_flags: 0,
                iod_nr: 1,
                iod_recxs: std::ptr::null_mut(),
            });
        }
        for v in &mut s.values {
            s.iovs.push(iov(v.as_mut_ptr(), v.len()));
        }
        // The iovs no longer grow: their addresses are final.
        let base = s.iovs.as_mut_ptr();
        for (i, v) in s.values.iter().enumerate() {
            // SAFETY: i < iovs.len() (one iov per value).
            let iov = unsafe { base.add(i) };
            s.sgls.push(d_sg_list_t { sg_nr: u32::from(!v.is_empty()), sg_nr_out: 0, sg_iovs: iov });
        }
        s
    }
}

impl Object {
    /// Writes (or, with `None`, punches) single-value akeys of `dkey` in one update, atomic per
    /// dkey. `flags`: DAOS's conditional flags (`DAOS_COND_DKEY_INSERT`, ...).
    pub fn put_values(&self, dkey: &[u8], puts: &[Put], flags: u64, bound: Bound) -> Result<(), Error> {
        let lib = self.lib;
        let oh = self.oh;
        let akeys = puts.iter().map(|(a, _)| a.to_vec()).collect();
        let values: Vec<Vec<u8>> = puts.iter().map(|(_, v)| v.map(<[u8]>::to_vec).unwrap_or_default()).collect();
        let sizes: Vec<u64> = values.iter().map(|v| v.len() as u64).collect();
        let st = Singles::new(dkey, akeys, values, &sizes);
        bounded(lib, "daos_obj_update", bound, st, |s, ev| {
            // SAFETY: every descriptor lives in bounded's state (heap blocks that stay put) until
            // the event completes or is leaked with it.
            unsafe {
                lib.api.daos_obj_update(
                    oh,
                    sys::daos_handle_t::default(),
                    flags,
                    &mut *s.dkey_iov,
                    s.iods.len() as u32,
                    s.iods.as_mut_ptr(),
                    s.sgls.as_mut_ptr(),
                    ev,
                )
            }
        })
        .map(|_| ())
    }

    /// One fetch of the single values `st` describes, inside `tx` if given; with `sizes_only`
    /// (NULL sgls) a size query: DAOS writes each value's size into its iod.
    fn fetch_singles(&self, st: Singles, tx: Option<&Tx>, sizes_only: bool, bound: Bound) -> Result<Singles, Error> {
        let (lib, oh, th) = (self.lib, self.oh, th_of(tx));
        bounded(lib, "daos_obj_fetch", bound, st, |s, ev| {
            let sgls = if sizes_only { std::ptr::null_mut() } else { s.sgls.as_mut_ptr() };
            // SAFETY: as in put_values; each sgl points at a buffer of its value's size (or there
            // are none: a size query); `th` is NONE or an open transaction of the caller's.
            unsafe {
                lib.api.daos_obj_fetch(
                    oh,
                    th,
                    0,
                    &mut *s.dkey_iov,
                    s.iods.len() as u32,
                    s.iods.as_mut_ptr(),
                    sgls,
                    std::ptr::null_mut(),
                    ev,
                )
            }
        })
    }

    /// The values of single-value akeys of `dkey`, None where absent: a size query, then one
    /// fetch of the present ones (two RPCs; one when none is present).
    pub fn get_values(&self, dkey: &[u8], akeys: &[&[u8]], bound: Bound) -> Result<Vec<Option<Vec<u8>>>, Error> {
        let owned: Vec<Vec<u8>> = akeys.iter().map(|a| a.to_vec()).collect();
        let sizes = vec![sys::DAOS_REC_ANY; akeys.len()];
        let st =
            self.fetch_singles(Singles::new(dkey, owned, vec![Vec::new(); akeys.len()], &sizes), None, true, bound)?;
        let found: Vec<u64> = st.iods.iter().map(|d| d.iod_size).collect();
        let present: Vec<usize> = (0..akeys.len()).filter(|&i| found[i] > 0).collect();
        let mut out: Vec<Option<Vec<u8>>> = vec![None; akeys.len()];
        if present.is_empty() {
            return Ok(out);
        }
        let owned: Vec<Vec<u8>> = present.iter().map(|&i| akeys[i].to_vec()).collect();
        let sizes: Vec<u64> = present.iter().map(|&i| found[i]).collect();
        let bufs: Vec<Vec<u8>> = sizes.iter().map(|&n| vec![0u8; n as usize]).collect();
        let st = self.fetch_singles(Singles::new(dkey, owned, bufs, &sizes), None, false, bound)?;
        // A value punched (or resized) between the two RPCs: DAOS reports its size now; take
        // only what the buffer held, and nothing for a value that is gone.
        for (j, &i) in present.iter().enumerate() {
            let n = st.iods[j].iod_size as usize;
            if n > 0 && n <= st.values[j].len() {
                let mut v = st.values[j].clone();
                v.truncate(n);
                out[i] = Some(v);
            }
        }
        Ok(out)
    }

    /// The value of one single-value akey of a known size, None where absent: one RPC. A value
    /// of another size fails (`DER_REC2BIG` when larger). `tx`: read inside that transaction.
    pub fn get_sized(
        &self,
        dkey: &[u8],
        akey: &[u8],
        size: usize,
        tx: Option<&Tx>,
        bound: Bound,
    ) -> Result<Option<Vec<u8>>, Error> {
        let st = Singles::new(dkey, vec![akey.to_vec()], vec![vec![0u8; size]], &[size as u64]);
        let st = self.fetch_singles(st, tx, false, bound)?;
        let n = st.iods[0].iod_size as usize;
        Ok((n == size).then(|| st.values[0].clone()))
    }

    /// Punches one dkey and everything under it (`daos_obj_punch_dkeys` takes one dkey per call);
    /// inside `tx`, at its commit.
    pub fn punch_dkey(&self, dkey: &[u8], tx: Option<&Tx>, bound: Bound) -> Result<(), Error> {
        let lib = self.lib;
        let oh = self.oh;
        let th = th_of(tx);
        let st = Singles::new(dkey, Vec::new(), Vec::new(), &[]);
        bounded(lib, "daos_obj_punch_dkeys", bound, st, |s, ev| {
            // SAFETY: the dkey iov and its bytes live in bounded's state; `th` is NONE or an open
            // transaction of the caller's.
            unsafe { lib.api.daos_obj_punch_dkeys(oh, th, 0, 1, &mut *s.dkey_iov, ev) }
        })
        .map(|_| ())
    }
}

/// A pool's space on one medium: its total, and the free bytes of its fullest target.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Media {
    pub total: u64,
    /// Free bytes of the fullest target (`ps_free_min`).
    pub free_min: u64,
    pub targets: u32,
}

impl Media {
    /// Free share of the fullest target. DAOS refuses a write when the target its dkey hashes
    /// to is full, whatever the pool's total free space says (measured: one target full at
    /// `DER_NOSPACE` while the pool reported 1.2 GB free on the other), so this is what counts.
    fn free_share(&self) -> Option<f64> {
        if self.total == 0 {
            return None;
        }
        let per_target = self.total as f64 / f64::from(self.targets.max(1));
        Some((self.free_min as f64 / per_target).clamp(0.0, 1.0))
    }
}

/// A pool's space: storage-class memory (SCM: metadata, and data on pools without NVMe) and
/// NVMe. DAOS refuses a write when the medium it needs is full, so the tighter one counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolSpace {
    pub scm: Media,
    pub nvme: Media,
}

impl PoolSpace {
    /// The smallest free share of a target over the media the pool has, in [0, 1].
    pub fn free_fraction(&self) -> f64 {
        [self.scm, self.nvme].iter().filter_map(Media::free_share).fold(1.0, f64::min)
    }

    /// Total bytes of the medium that bounds the pool (the one with the least free share).
    pub fn total(&self) -> u64 {
        [self.scm, self.nvme]
            .iter()
            .filter_map(|m| Some((m.free_share()?, m.total)))
            .min_by(|a, b| a.0.total_cmp(&b.0))
            .map_or(0, |(_, t)| t)
    }
}

impl Pool {
    /// `daos_pool_query` for space: one RPC to the pool service.
    pub fn space(&self, bound: Bound) -> Result<PoolSpace, Error> {
        let lib = self.lib;
        let poh = self.poh;
        let info = Box::new(sys::daos_pool_info_t { pi_bits: sys::DPI_SPACE, ..Default::default() });
        let info = bounded(lib, "daos_pool_query", bound, info, |i, ev| {
            // SAFETY: the info lives in bounded's state (a box); no ranks, no properties.
            unsafe { lib.api.daos_pool_query(poh, std::ptr::null_mut(), &mut **i, std::ptr::null_mut(), ev) }
        })?;
        let sp = info.pi_space;
        let media =
            |m: usize| Media { total: sp.ps_space.s_total[m], free_min: sp.ps_free_min[m], targets: sp.ps_ntargets };
        Ok(PoolSpace { scm: media(0), nvme: media(1) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fullest_target_of_the_tighter_medium_counts() {
        // 2 targets of 50: the fullest has 10 free, so 20% free, though the pool has more.
        let scm_only = PoolSpace { scm: Media { total: 100, free_min: 10, targets: 2 }, nvme: Media::default() };
        assert!((scm_only.free_fraction() - 0.2).abs() < 1e-9);
        assert_eq!(scm_only.total(), 100);
        let both = PoolSpace {
            scm: Media { total: 100, free_min: 45, targets: 2 },
            nvme: Media { total: 1000, free_min: 25, targets: 2 },
        };
        assert!((both.free_fraction() - 0.05).abs() < 1e-9);
        assert_eq!(both.total(), 1000);
        assert_eq!(PoolSpace::default().free_fraction(), 1.0, "no media reported: nothing to evict for");
        assert_eq!(PoolSpace::default().total(), 0);
    }
}
