// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//! The in-memory store: pools → containers → objects → dkeys → akeys.
//!
//! Locking: the pool/container/object maps are only locked to look up (or insert) an `Arc`;
//! the data of one dkey sits behind its own `RwLock`, so RPCs on different dkeys (and
//! concurrent fetches of one dkey) copy in parallel.
//!
//! Array akeys keep their bytes in a sparse map of 1 MiB chunks per record size ("layer"),
//! plus a set of written record intervals: no per-byte or per-record metadata, and a write at a
//! huge index costs only the chunks it touches.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

use crate::copy::{copy_raw, copying};
use crate::hash::FastMap;

/// Bytes per storage chunk of an array layer.
pub const CHUNK: u64 = 1 << 20;

/// One record size's bytes: chunk index → bytes (a chunk may be shorter than CHUNK: it only
/// grows as far as it has been written).
#[derive(Default)]
pub struct Layer {
    pub rsize: u64,
    chunks: FastMap<u64, Vec<u8>>,
}

impl Layer {
    fn new(rsize: u64) -> Self {
        Layer { rsize, chunks: FastMap::default() }
    }

    /// Writes `total` bytes at byte offset `off`, pulling them from `src`, which is called with
    /// the number of bytes still wanted for the current chunk piece and must return a slice of
    /// at most that length (non-empty).
    pub fn write_with<'a>(&mut self, mut off: u64, mut total: u64, mut src: impl FnMut(usize) -> &'a [u8]) {
        let copy = copying(); // once: the zero-fill below must match whether the bytes are copied
        while total > 0 {
            let ci = off / CHUNK;
            let co = (off % CHUNK) as usize;
            let n = total.min(CHUNK - co as u64) as usize;
            let chunk = self.chunks.entry(ci).or_default();
            let end = co + n;
            let len = chunk.len();
            if end > chunk.capacity() {
                let want = end.max(chunk.capacity() * 2).min(CHUNK as usize);
                chunk.reserve_exact(want - len);
            }
            // Zero only the gap before the write (if any), then copy straight into the
            // chunk, possibly past its length: no zero-fill of bytes about to be written.
            // With copies off (`copy off`) the new bytes are zeroed instead, since no copy will
            // initialise them.
            if co > len || (end > len && !copy) {
                chunk.resize(if copy { co } else { end }, 0);
            }
            let base = chunk.as_mut_ptr();
            let mut got = 0;
            while got < n {
                let s = src(n - got);
                let k = s.len().min(n - got);
                if copy {
                    // SAFETY: capacity >= end = co + n, and got + k <= n.
                    unsafe { copy_raw(base.add(co + got), s.as_ptr(), k) };
                }
                got += k;
            }
            if end > chunk.len() {
                // SAFETY: [0, co) was initialised before, [co, end) just now (copied, or zeroed
                // above when copies are off).
                unsafe { chunk.set_len(end) };
            }
            off += n as u64;
            total -= n as u64;
        }
    }

    /// Reads `total` bytes at byte offset `off`, handing each contiguous piece to `dst`.
    /// Bytes never written (cannot happen for intervals marked written) read as zeros.
    pub fn read_with(&self, mut off: u64, mut total: u64, mut dst: impl FnMut(&[u8])) {
        static ZEROS: [u8; 4096] = [0; 4096];
        while total > 0 {
            let ci = off / CHUNK;
            let co = (off % CHUNK) as usize;
            let n = total.min(CHUNK - co as u64) as usize;
            match self.chunks.get(&ci) {
                Some(c) if c.len() >= co + n => dst(&c[co..co + n]),
                _ => {
                    let mut left = n;
                    while left > 0 {
                        let k = left.min(ZEROS.len());
                        dst(&ZEROS[..k]);
                        left -= k;
                    }
                }
            }
            off += n as u64;
            total -= n as u64;
        }
    }

    /// Frees the chunks lying wholly inside the byte range [start, end).
    fn free_bytes(&mut self, start: u64, end: u64) {
        let lo = start.div_ceil(CHUNK);
        let hi = end / CHUNK;
        if lo >= hi {
            return;
        }
        if hi - lo < self.chunks.len() as u64 {
            for ci in lo..hi {
                self.chunks.remove(&ci);
            }
        } else {
            self.chunks.retain(|ci, _| *ci < lo || *ci >= hi);
        }
    }

    pub fn bytes_held(&self) -> u64 {
        self.chunks.values().map(|c| c.capacity() as u64).sum()
    }
}

/// An array akey: written record intervals (start → (end, rsize), coalesced when adjacent with
/// the same record size) and the bytes, one layer per record size in use.
#[derive(Default)]
pub struct ArrayVal {
    intervals: BTreeMap<u64, (u64, u64)>,
    layers: Vec<Layer>,
}

impl ArrayVal {
    pub fn is_empty(&self) -> bool {
        self.intervals.is_empty()
    }

    /// Written intervals overlapping [a, e), clipped to it, in order: (start, end, rsize).
    pub fn overlapping(&self, a: u64, e: u64) -> impl Iterator<Item = (u64, u64, u64)> + '_ {
        let first = self.intervals.range(..a).next_back().filter(|(_, &(end, _))| end > a).map(|(&s, &v)| (s, v));
        first
            .into_iter()
            .chain(self.intervals.range(a..e).map(|(&s, &v)| (s, v)))
            .map(move |(s, (end, r))| (s.max(a), end.min(e), r))
    }

    pub fn layer(&self, rsize: u64) -> Option<&Layer> {
        self.layers.iter().find(|l| l.rsize == rsize)
    }

    pub fn layer_mut(&mut self, rsize: u64) -> &mut Layer {
        if let Some(i) = self.layers.iter().position(|l| l.rsize == rsize) {
            &mut self.layers[i]
        } else {
            self.layers.push(Layer::new(rsize));
            self.layers.last_mut().unwrap()
        }
    }

    /// Removes the records [a, e) from the interval set (not from the layers).
    fn cut(&mut self, a: u64, e: u64) {
        let mut hits: Vec<(u64, u64, u64)> = Vec::new();
        if let Some((&s, &(end, r))) = self.intervals.range(..a).next_back() {
            if end > a {
                hits.push((s, end, r));
            }
        }
        hits.extend(self.intervals.range(a..e).map(|(&s, &(end, r))| (s, end, r)));
        for (s, end, r) in hits {
            self.intervals.remove(&s);
            if s < a {
                self.intervals.insert(s, (a, r));
            }
            if end > e {
                self.intervals.insert(e, (end, r));
            }
        }
    }

    /// Marks records [a, e) of size `rsize` as written (newest wins).
    pub fn mark_written(&mut self, a: u64, e: u64, rsize: u64) {
        // Overwrite in place (the steady state of a KV cache): one written interval of the
        // same record size already covers [a, e), and cutting and re-merging would give it back.
        if let Some((_, &(end, r))) = self.intervals.range(..=a).next_back() {
            if end >= e && r == rsize {
                return;
            }
        }
        self.cut(a, e);
        let mut start = a;
        let mut end = e;
        if let Some((&s, &(pe, r))) = self.intervals.range(..a).next_back() {
            if pe == a && r == rsize {
                self.intervals.remove(&s);
                start = s;
            }
        }
        if let Some(&(ne, r)) = self.intervals.get(&e) {
            if r == rsize {
                self.intervals.remove(&e);
                end = ne;
            }
        }
        self.intervals.insert(start, (end, rsize));
        if self.layers.len() > 1 {
            self.drop_unused_layers();
        }
    }

    /// Punches records [a, e): they become holes; wholly covered chunks are freed.
    pub fn punch(&mut self, a: u64, e: u64) {
        self.cut(a, e);
        if self.intervals.is_empty() {
            self.layers.clear();
            return;
        }
        for l in &mut self.layers {
            if let (Some(bs), Some(be)) = (a.checked_mul(l.rsize), e.checked_mul(l.rsize)) {
                l.free_bytes(bs, be);
            }
        }
        if self.layers.len() > 1 {
            self.drop_unused_layers();
        }
    }

    fn drop_unused_layers(&mut self) {
        let used: Vec<u64> = {
            let mut v: Vec<u64> = self.intervals.values().map(|&(_, r)| r).collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        self.layers.retain(|l| used.binary_search(&l.rsize).is_ok());
    }

    /// The first or last written interval: (start, end).
    pub fn extent(&self, max: bool) -> Option<(u64, u64)> {
        let it = if max { self.intervals.iter().next_back() } else { self.intervals.iter().next() };
        it.map(|(&s, &(e, _))| (s, e))
    }

    pub fn bytes_held(&self) -> u64 {
        self.layers.iter().map(Layer::bytes_held).sum()
    }

    #[cfg(test)]
    pub fn intervals(&self) -> Vec<(u64, u64, u64)> {
        self.intervals.iter().map(|(&s, &(e, r))| (s, e, r)).collect()
    }
}

pub enum AkeyVal {
    Single(Vec<u8>),
    Array(ArrayVal),
}

impl AkeyVal {
    /// Bytes of storage this value takes (what pool space counts).
    pub fn bytes_held(&self) -> u64 {
        match self {
            AkeyVal::Single(s) => s.capacity() as u64,
            AkeyVal::Array(a) => a.bytes_held(),
        }
    }
}

#[derive(Default)]
pub struct DkeyData {
    /// Set when the dkey was punched while someone held its `Arc`: writers then look it up again.
    pub dead: bool,
    pub akeys: FastMap<Box<[u8]>, AkeyVal>,
    /// Bumped by every update: a transaction that read the dkey conflicts with any update since.
    pub version: u64,
}

pub type DkeyRef = Arc<RwLock<DkeyData>>;

/// A fresh dkey version (see `DkeyData::version`), never 0.
pub fn next_version() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

#[derive(Default)]
pub struct ObjData {
    pub dkeys: RwLock<FastMap<Box<[u8]>, DkeyRef>>,
}

impl ObjData {
    pub fn dkey(&self, key: &[u8]) -> Option<DkeyRef> {
        self.dkeys.read().get(key).cloned()
    }

    pub fn dkey_or_insert(&self, key: &[u8]) -> DkeyRef {
        if let Some(d) = self.dkey(key) {
            return d;
        }
        self.dkeys.write().entry(key.into()).or_default().clone()
    }

    /// A transaction's punch: removes the dkey only if it is still the one that was read
    /// (`seen`: its `Arc` address and version, None for absent). Ok(bytes freed) or Err(()) on a
    /// conflict. The check and the removal happen under the dkey's lock, so no update slips
    /// between them.
    pub fn remove_dkey_if(&self, key: &[u8], seen: Option<(usize, u64)>) -> Result<u64, ()> {
        let Some(d) = self.dkey(key) else {
            return if seen.is_none() { Ok(0) } else { Err(()) };
        };
        let held = {
            let mut g = d.write();
            let now = (!g.dead && !g.akeys.is_empty()).then(|| (Arc::as_ptr(&d) as usize, g.version));
            if now != seen {
                return Err(());
            }
            g.dead = true;
            let held = g.akeys.values().map(AkeyVal::bytes_held).sum();
            g.akeys.clear();
            held
        };
        let mut m = self.dkeys.write();
        if m.get(key).is_some_and(|cur| Arc::ptr_eq(cur, &d)) {
            m.remove(key);
        }
        Ok(held)
    }

    /// What a transaction records of a dkey it read: its `Arc` address and version, None when
    /// absent (or empty).
    pub fn seen(&self, key: &[u8]) -> Option<(usize, u64)> {
        let d = self.dkey(key)?;
        let g = d.read();
        (!g.dead && !g.akeys.is_empty()).then(|| (Arc::as_ptr(&d) as usize, g.version))
    }

    /// Removes a dkey (punch). Returns whether it held any akey, and the bytes it held.
    pub fn remove_dkey(&self, key: &[u8]) -> (bool, u64) {
        let d = self.dkeys.write().remove(key);
        match d {
            Some(d) => {
                let mut g = d.write();
                g.dead = true;
                let had = !g.akeys.is_empty();
                let held = g.akeys.values().map(AkeyVal::bytes_held).sum();
                g.akeys.clear();
                (had, held)
            }
            None => (false, 0),
        }
    }

    /// Removes every dkey (object punch). Returns whether any akey existed.
    pub fn clear(&self) -> bool {
        let all: Vec<DkeyRef> = self.dkeys.write().drain().map(|(_, d)| d).collect();
        let mut had = false;
        for d in all {
            let mut g = d.write();
            g.dead = true;
            had |= !g.akeys.is_empty();
            g.akeys.clear();
        }
        had
    }
}

pub struct ContData {
    pub label: String,
    pub uuid: [u8; 16],
    /// Redundancy factor (property rd_fac); objects whose class tolerates fewer failures fail
    /// to open.
    pub rf: u32,
    objects: RwLock<FastMap<(u64, u64), Arc<ObjData>>>,
    /// User-defined attributes (daos_cont_set_attr / daos_cont_get_attr).
    pub attrs: Mutex<HashMap<String, Vec<u8>>>,
    /// The ACL it was created with (`DAOS_PROP_CO_ACL`), else DAOS's default; recorded, not
    /// enforced (`crate::acl`).
    pub acl: Mutex<Vec<String>>,
}

impl ContData {
    pub fn new(label: &str, rf: u32) -> Self {
        ContData {
            label: label.to_string(),
            uuid: new_uuid(),
            rf,
            objects: RwLock::new(FastMap::default()),
            attrs: Mutex::new(HashMap::new()),
            acl: Mutex::new(crate::acl::DEFAULT_CONT_ACL.iter().map(|s| s.to_string()).collect()),
        }
    }

    pub fn object(&self, oid: (u64, u64)) -> Option<Arc<ObjData>> {
        self.objects.read().get(&oid).cloned()
    }

    pub fn object_or_insert(&self, oid: (u64, u64)) -> Arc<ObjData> {
        if let Some(o) = self.object(oid) {
            return o;
        }
        self.objects.write().entry(oid).or_default().clone()
    }

    pub fn reset(&self) {
        let all: Vec<Arc<ObjData>> = self.objects.write().drain().map(|(_, o)| o).collect();
        for o in all {
            o.clear();
        }
    }

    pub fn bytes_held(&self) -> u64 {
        let objs: Vec<Arc<ObjData>> = self.objects.read().values().cloned().collect();
        let mut n = 0;
        for o in objs {
            let dks: Vec<DkeyRef> = o.dkeys.read().values().cloned().collect();
            for d in dks {
                for v in d.read().akeys.values() {
                    n += v.bytes_held();
                }
            }
        }
        n
    }
}

pub struct PoolData {
    pub label: String,
    pub uuid: [u8; 16],
    pub conts: Mutex<Vec<Arc<ContData>>>,
    /// Capacity and bytes held (see `space`).
    pub space: crate::space::Space,
}

impl PoolData {
    pub fn find_cont(&self, name: &str) -> Option<Arc<ContData>> {
        let uuid = parse_uuid(name);
        self.conts.lock().iter().find(|c| c.label == name || uuid.is_some_and(|u| u == c.uuid)).cloned()
    }
}

pub struct Store {
    pub pools: Vec<Arc<PoolData>>,
}

impl Store {
    /// Parses DAOS_SIM_POOLS syntax: "pool:cont,cont;pool2:cont".
    pub fn from_spec(spec: &str, rf: u32) -> Store {
        let mut pools = Vec::new();
        for part in spec.split(';').map(str::trim).filter(|s| !s.is_empty()) {
            let (pool, conts) = part.split_once(':').unwrap_or((part, ""));
            let pool = pool.trim();
            if pool.is_empty() {
                continue;
            }
            let conts: Vec<Arc<ContData>> = conts
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(|c| Arc::new(ContData::new(c, rf)))
                .collect();
            pools.push(Arc::new(PoolData {
                label: pool.to_string(),
                uuid: new_uuid(),
                conts: Mutex::new(conts),
                space: Default::default(),
            }));
        }
        Store { pools }
    }

    pub fn find_pool(&self, name: &str) -> Option<Arc<PoolData>> {
        let uuid = parse_uuid(name);
        self.pools.iter().find(|p| p.label == name || uuid.is_some_and(|u| u == p.uuid)).cloned()
    }

    /// Every object of every container, for the controls that reach behind the client.
    fn objects(&self) -> Vec<Arc<ObjData>> {
        let mut out = Vec::new();
        for p in &self.pools {
            for c in p.conts.lock().iter() {
                out.extend(c.objects.read().values().cloned());
            }
        }
        out
    }

    /// Flips the bits of the byte at `offset` of byte-array akey `akey` of `dkey`, wherever it
    /// is stored (as a disk or a wire would corrupt it). Returns how many bytes were flipped.
    pub fn flip(&self, dkey: &[u8], akey: &[u8], offset: u64) -> usize {
        let mut flipped = 0;
        for o in self.objects() {
            let Some(d) = o.dkey(dkey) else { continue };
            let mut g = d.write();
            let Some(AkeyVal::Array(a)) = g.akeys.get_mut(akey) else { continue };
            if !a.overlapping(offset, offset + 1).any(|_| true) {
                continue;
            }
            let layer = a.layer_mut(1);
            let mut byte = 0u8;
            layer.read_with(offset, 1, |b| byte = b[0]);
            let new = [!byte];
            layer.write_with(offset, 1, |_| &new[..]);
            flipped += 1;
        }
        flipped
    }

    /// Removes akey `akey` from every dkey of every object (values as a version of the plugin
    /// that did not write it left them). Returns how many were removed.
    pub fn drop_akey(&self, akey: &[u8]) -> usize {
        let mut n = 0;
        for o in self.objects() {
            let dks: Vec<DkeyRef> = o.dkeys.read().values().cloned().collect();
            for d in dks {
                n += usize::from(d.write().akeys.remove(akey).is_some());
            }
        }
        n
    }

    /// Drops all data, and hands the freed memory back to the OS.
    pub fn reset_data(&self) {
        for p in &self.pools {
            let conts: Vec<Arc<ContData>> = p.conts.lock().clone();
            for c in conts {
                c.reset();
            }
            p.space.clear();
        }
        release_free_memory();
    }
}

/// Returns free heap pages to the OS. Freed 1 MiB chunks mostly go back by themselves, but
/// glibc raises its mmap threshold after the first free, so later chunks come from the arenas,
/// where pages below a live allocation stay resident. `malloc_trim` releases those too.
fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        extern "C" {
            fn malloc_trim(pad: usize) -> std::os::raw::c_int;
        }
        // SAFETY: no arguments to get wrong; it only releases free pages.
        unsafe { malloc_trim(0) };
    }
}

/// A random-enough version-4 UUID (no external crate): process id, time and a counter mixed.
pub fn new_uuid() -> [u8; 16] {
    use std::sync::atomic::{AtomicU64, Ordering};
    static CTR: AtomicU64 = AtomicU64::new(0);
    let t =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0);
    let mix = |mut x: u64| {
        x ^= x >> 33;
        x = x.wrapping_mul(0xff51afd7ed558ccd);
        x ^= x >> 33;
        x = x.wrapping_mul(0xc4ceb9fe1a85ec53);
        x ^ (x >> 33)
    };
    let c = CTR.fetch_add(1, Ordering::Relaxed);
    let a = mix(t ^ ((std::process::id() as u64) << 32) ^ c);
    let b = mix(a ^ c.wrapping_add(0x9e3779b97f4a7c15));
    let mut u = [0u8; 16];
    u[..8].copy_from_slice(&a.to_le_bytes());
    u[8..].copy_from_slice(&b.to_le_bytes());
    u[6] = (u[6] & 0x0f) | 0x40;
    u[8] = (u[8] & 0x3f) | 0x80;
    u
}

/// Parses the canonical 36-character UUID form.
pub fn parse_uuid(s: &str) -> Option<[u8; 16]> {
    let b = s.as_bytes();
    if b.len() != 36 {
        return None;
    }
    let mut out = [0u8; 16];
    let mut n = 0;
    let mut i = 0;
    while i < 36 {
        if matches!(i, 8 | 13 | 18 | 23) {
            if b[i] != b'-' {
                return None;
            }
            i += 1;
            continue;
        }
        let hex = |c: u8| (c as char).to_digit(16);
        let hi = hex(b[i])?;
        let lo = hex(b[i + 1])?;
        out[n] = (hi * 16 + lo) as u8;
        n += 1;
        i += 2;
    }
    Some(out)
}

/// DAOS label rule: 1..=127 chars of [A-Za-z0-9._:-], and not a UUID.
pub fn label_is_valid(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 127
        && s.bytes().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b':' | b'-'))
        && parse_uuid(s).is_none()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_merge_split() {
        let mut a = ArrayVal::default();
        a.mark_written(0, 10, 1);
        a.mark_written(10, 20, 1);
        assert_eq!(a.intervals(), vec![(0, 20, 1)]);
        a.mark_written(5, 8, 2);
        assert_eq!(a.intervals(), vec![(0, 5, 1), (5, 8, 2), (8, 20, 1)]);
        a.mark_written(5, 8, 1);
        assert_eq!(a.intervals(), vec![(0, 20, 1)]);
        a.punch(3, 6);
        assert_eq!(a.intervals(), vec![(0, 3, 1), (6, 20, 1)]);
        let ov: Vec<_> = a.overlapping(2, 7).collect();
        assert_eq!(ov, vec![(2, 3, 1), (6, 7, 1)]);
        assert_eq!(a.extent(true), Some((6, 20)));
        assert_eq!(a.extent(false), Some((0, 3)));
        a.punch(0, 100);
        assert!(a.is_empty());
    }

    /// Random writes (overwrites in place, partial overlaps, other record sizes, neighbours)
    /// and punches against a per-record model: the intervals must be the model's runs, exactly
    /// coalesced, whichever path (in-place fast path or cut and merge) a write takes.
    #[test]
    fn intervals_match_record_model() {
        const N: usize = 96;
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut rnd = |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        for _round in 0..40 {
            let mut a = ArrayVal::default();
            let mut model: Vec<u64> = vec![0; N]; // 0 = hole, else record size
            for _ in 0..60 {
                let s = rnd(N as u64);
                let e = (s + 1 + rnd(24)).min(N as u64);
                if rnd(6) == 0 {
                    a.punch(s, e);
                    model[s as usize..e as usize].fill(0);
                } else {
                    let r = 1 + rnd(2);
                    a.layer_mut(r); // as io::apply_update does
                    a.mark_written(s, e, r);
                    model[s as usize..e as usize].fill(r);
                }
                let mut want = Vec::new();
                let mut i = 0;
                while i < N {
                    let r = model[i];
                    let j = (i..N).find(|&j| model[j] != r).unwrap_or(N);
                    if r != 0 {
                        want.push((i as u64, j as u64, r));
                    }
                    i = j;
                }
                assert_eq!(a.intervals(), want, "after [{s}, {e})");
                let mut used: Vec<u64> = want.iter().map(|w| w.2).collect();
                used.sort_unstable();
                used.dedup();
                for l in &a.layers {
                    assert!(used.contains(&l.rsize), "layer {} kept without records", l.rsize);
                }
            }
        }
    }

    #[test]
    fn layer_roundtrip_across_chunks() {
        let mut l = Layer::new(1);
        let data: Vec<u8> = (0..(3 * CHUNK as usize)).map(|i| (i % 251) as u8).collect();
        let off = CHUNK / 2;
        let mut pos = 0;
        l.write_with(off, data.len() as u64, |want| {
            let s = &data[pos..pos + want.min(1000)];
            pos += s.len();
            s
        });
        let mut out = Vec::new();
        l.read_with(off, data.len() as u64, |s| out.extend_from_slice(s));
        assert_eq!(out, data);
        l.free_bytes(0, 4 * CHUNK);
        assert_eq!(l.bytes_held(), 0);
    }

    /// Writes past the end of a chunk, with a gap, and overlapping its end; big ones stream.
    #[test]
    fn layer_writes_gaps_and_overlaps() {
        fn write(l: &mut Layer, model: &mut Vec<u8>, off: usize, len: usize, v: u8) {
            let data: Vec<u8> = (0..len).map(|i| v ^ (i % 253) as u8).collect();
            let mut pos = 0;
            l.write_with(off as u64, len as u64, |want| {
                let s = &data[pos..pos + want.min(300_000)];
                pos += s.len();
                s
            });
            if model.len() < off + len {
                model.resize(off + len, 0);
            }
            model[off..off + len].copy_from_slice(&data);
        }
        let mut l = Layer::new(1);
        let mut model = Vec::new();
        let c = CHUNK as usize;
        for (off, len, v) in [
            (100, 200, 1),
            (50, 200, 2),
            (1000, 10, 3),
            (5000, 400_000, 4),
            (c - 3, 700_001, 5),
            (c + 900_000, 2 * c, 6),
            (17, c - 17, 7),
        ] {
            write(&mut l, &mut model, off, len, v);
            let mut out = Vec::new();
            l.read_with(0, model.len() as u64, |s| out.extend_from_slice(s));
            assert!(out == model, "after writing {len} at {off}");
        }
    }

    #[test]
    fn pools_spec() {
        let s = Store::from_spec(" sim:kv, other ; pool2:c1;bare;;:x", 0);
        let names: Vec<&str> = s.pools.iter().map(|p| p.label.as_str()).collect();
        assert_eq!(names, ["sim", "pool2", "bare"]);
        let conts: Vec<String> = s.pools[0].conts.lock().iter().map(|c| c.label.clone()).collect();
        assert_eq!(conts, ["kv", "other"]);
        assert!(s.pools[2].conts.lock().is_empty());
        assert!(s.find_pool("pool2").unwrap().find_cont("c1").is_some());
        assert!(s.find_pool("nope").is_none());
    }

    #[test]
    fn uuid_and_labels() {
        let u = new_uuid();
        let s = format!(
            "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
            u32::from_be_bytes(u[0..4].try_into().unwrap()),
            u16::from_be_bytes(u[4..6].try_into().unwrap()),
            u16::from_be_bytes(u[6..8].try_into().unwrap()),
            u16::from_be_bytes(u[8..10].try_into().unwrap()),
            u64::from_be_bytes([0, 0, u[10], u[11], u[12], u[13], u[14], u[15]])
        );
        assert_eq!(parse_uuid(&s), Some(u));
        assert!(!label_is_valid(&s));
        assert!(label_is_valid("kv.cache-1:x_y"));
        assert!(!label_is_valid(""));
        assert!(!label_is_valid("has space"));
        assert!(!label_is_valid(&"a".repeat(128)));
    }
}
