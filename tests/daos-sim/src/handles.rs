// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//! Handle registry: cookie → pool / container / object / EQ handle. Cookies are never 0.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use parking_lot::{RwLock, RwLockWriteGuard};

use crate::event::Eq;
use crate::ffi::*;
use crate::hash::FastMap;
use crate::store::{ContData, ObjData, PoolData};

pub struct PoolH {
    pub pool: Arc<PoolData>,
    pub writable: bool,
    pub open_conts: AtomicUsize,
}

pub struct ContH {
    pub poh: Arc<PoolH>,
    pub cont: Arc<ContData>,
    pub writable: bool,
}

pub struct ObjH {
    pub coh: Arc<ContH>,
    pub oid: daos_obj_id_t,
    pub writable: bool,
    pub otype: u32,
    /// What the cost model multiplies an update's bytes by (replicas; see `cost`).
    pub write_copies: f64,
}

impl ObjH {
    pub fn dkey_u64(&self) -> bool {
        matches!(
            self.otype,
            DAOS_OT_MULTI_UINT64
                | DAOS_OT_DKEY_UINT64
                | DAOS_OT_KV_UINT64
                | DAOS_OT_ARRAY
                | DAOS_OT_ARRAY_ATTR
                | DAOS_OT_ARRAY_BYTE
        )
    }

    pub fn akey_u64(&self) -> bool {
        matches!(self.otype, DAOS_OT_MULTI_UINT64 | DAOS_OT_AKEY_UINT64)
    }

    fn key(&self) -> (u64, u64) {
        (self.oid.lo, self.oid.hi)
    }

    /// The object's data, created on first use.
    pub fn data(&self) -> Arc<ObjData> {
        self.coh.cont.object_or_insert(self.key())
    }

    /// The object's data if it was ever written.
    pub fn data_if_any(&self) -> Option<Arc<ObjData>> {
        self.coh.cont.object(self.key())
    }
}

#[derive(Clone)]
pub enum Hdl {
    Pool(Arc<PoolH>),
    Cont(Arc<ContH>),
    Obj(Arc<ObjH>),
    Eq(Arc<Eq>),
    Tx(Arc<crate::tx::TxH>),
}

type Reg = RwLock<FastMap<u64, Hdl>>;

fn reg() -> &'static Reg {
    static R: OnceLock<Reg> = OnceLock::new();
    R.get_or_init(|| RwLock::new(FastMap::default()))
}

static NEXT: AtomicU64 = AtomicU64::new(0x5100_0000);

pub fn lookup(h: daos_handle_t) -> Option<Hdl> {
    if h.cookie == 0 {
        return None;
    }
    reg().read().get(&h.cookie).cloned()
}

pub fn pool(h: daos_handle_t) -> Option<Arc<PoolH>> {
    match lookup(h) {
        Some(Hdl::Pool(p)) => Some(p),
        _ => None,
    }
}

pub fn cont(h: daos_handle_t) -> Option<Arc<ContH>> {
    match lookup(h) {
        Some(Hdl::Cont(c)) => Some(c),
        _ => None,
    }
}

pub fn obj(h: daos_handle_t) -> Option<Arc<ObjH>> {
    match lookup(h) {
        Some(Hdl::Obj(o)) => Some(o),
        _ => None,
    }
}

pub fn tx(h: daos_handle_t) -> Option<Arc<crate::tx::TxH>> {
    match lookup(h) {
        Some(Hdl::Tx(t)) => Some(t),
        _ => None,
    }
}

pub fn eq(h: daos_handle_t) -> Option<Arc<Eq>> {
    match lookup(h) {
        Some(Hdl::Eq(e)) => Some(e),
        _ => None,
    }
}

/// Registers a handle; a container's pool counter is bumped under the registry lock so that
/// the BUSY check of a pool disconnect is exact.
pub fn insert(h: Hdl) -> daos_handle_t {
    let cookie = NEXT.fetch_add(1, Ordering::Relaxed);
    let mut r = reg().write();
    if let Hdl::Cont(c) = &h {
        c.poh.open_conts.fetch_add(1, Ordering::Relaxed);
    }
    r.insert(cookie, h);
    daos_handle_t { cookie }
}

/// Write access to the registry, for close paths that check-and-remove atomically.
pub fn write() -> RwLockWriteGuard<'static, FastMap<u64, Hdl>> {
    reg().write()
}
