// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//! Transactions, as far as a client that reads a key and then punches it needs them: a fetch
//! with a transaction handle records what it read (each dkey's identity and version), a punch
//! with it is held back, and the commit applies the punches only if none of the dkeys read has
//! changed since (`-DER_TX_RESTART` otherwise), atomically with respect to updates of them.
//!
//! That is the outcome DAOS's MVCC gives such a transaction (its reads and writes at one epoch:
//! an update after the read either serializes after the transaction, or makes it restart), not
//! its mechanism: there are no epochs here. Updates inside a transaction are not modelled
//! (`-DER_NOTSUPPORTED`).

use std::os::raw::c_int;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::ffi::*;
use crate::handles::{ContH, ObjH};

/// A dkey a transaction read: the object, the key, what it was (see `ObjData::seen`).
struct Read {
    obj: Arc<ObjH>,
    dkey: Vec<u8>,
    seen: Option<(usize, u64)>,
}

#[derive(Default)]
struct State {
    reads: Vec<Read>,
    punches: Vec<(Arc<ObjH>, Vec<u8>)>,
    committed: bool,
}

pub struct TxH {
    pub coh: Arc<ContH>,
    state: Mutex<State>,
}

/// Commits of all transactions, one at a time (a punch and a check of another commit must not
/// interleave).
static COMMIT: Mutex<()> = Mutex::new(());

impl TxH {
    pub fn new(coh: Arc<ContH>) -> TxH {
        TxH { coh, state: Mutex::new(State::default()) }
    }

    /// A fetch of `dkey` of `obj` inside the transaction is about to run (recorded before it
    /// runs: the fetch then sees what was recorded, or newer, which only makes a conflict
    /// likelier).
    pub fn read(&self, obj: &Arc<ObjH>, dkey: &[u8]) {
        let seen = obj.data_if_any().and_then(|d| d.seen(dkey));
        self.state.lock().reads.push(Read { obj: obj.clone(), dkey: dkey.to_vec(), seen });
    }

    pub fn punch(&self, obj: &Arc<ObjH>, dkey: &[u8]) -> c_int {
        let mut s = self.state.lock();
        if s.committed {
            return -DER_NO_PERM;
        }
        s.punches.push((obj.clone(), dkey.to_vec()));
        0
    }

    /// 0, `-DER_TX_RESTART` on a conflict (nothing applied), `-DER_NO_PERM` once committed.
    pub fn commit(&self) -> c_int {
        let _one = COMMIT.lock();
        let mut s = self.state.lock();
        if s.committed {
            return -DER_NO_PERM;
        }
        // A conflict: a dkey read has changed (or the first punch would find it changed).
        for r in &s.reads {
            let now = r.obj.data_if_any().and_then(|d| d.seen(&r.dkey));
            if now != r.seen {
                return -DER_TX_RESTART;
            }
        }
        for (obj, dkey) in &s.punches {
            let seen = s.reads.iter().find(|r| Arc::ptr_eq(&r.obj, obj) && r.dkey == *dkey).map(|r| r.seen);
            let Some(data) = obj.data_if_any() else { continue };
            let freed = match seen {
                // Read in this transaction: punched only while still what was read.
                Some(seen) => match data.remove_dkey_if(dkey, seen) {
                    Ok(b) => b,
                    Err(()) => return -DER_TX_RESTART,
                },
                None => data.remove_dkey(dkey).1,
            };
            obj.coh.poh.pool.space.punched(freed);
        }
        s.committed = true;
        0
    }

    /// Drops what the transaction did so far (`daos_tx_restart`).
    pub fn restart(&self) {
        let mut s = self.state.lock();
        s.reads.clear();
        s.punches.clear();
        s.committed = false;
    }
}
