// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0

//! Dynamo KVBM's object tier (G4), reproduced through `nixl-sys` only, against an installed NIXL
//! with our plugin installed as `OBJ`.
//!
//! What is reproduced, and from where (ai-dynamo/dynamo; none of its code is copied, the
//! descriptor pattern is rebuilt from these lines):
//! - `lib/kvbm-engine/src/object/nixl.rs` on main (stored version 575a8c80):
//!   - L66-72 `poll_interval()`: 50 ms between status calls (`DYN_KVBM_NIXL_OBJ_POLL_MS`);
//!   - L78-81 `hash_to_device_id()`: the 128-bit sequence hash XOR-folded into the OBJ device_id;
//!   - L90-92 `add_obj_backend()`: `create_backend("OBJ", S3 params)` (through dynamo-memory's
//!     `NixlAgent::add_backend_with_params`, which on main lays the S3 params over the plugin's
//!     `get_plugin_params` defaults; in dynamo-memory 1.6.1 it refuses any params at all);
//!   - L203-211 `has_blocks()`: answered by an S3 HEAD delegate, never by NIXL (all absent without);
//!   - L272-376 `execute_nixl_obj_transfer()`: per block one OBJ registration {addr 0, size
//!     block_size, device_id} (L312-319); fully contiguous: one DRAM/OBJ descriptor pair per block
//!     (L321-325); layer-separate: one DRAM descriptor per (layer, outer) region against
//!     increasing offsets inside the same object (L326-341); one `create_xfer_req` + one
//!     `post_xfer_req` for the whole batch, loopback to the agent itself (L345-348); the OBJ
//!     registration handles are dropped when the closure returns, i.e. after the post and before
//!     completion (L300-349); then sleep-then-poll `get_xfer_status` (L360-372); any error fails
//!     every key of the batch (L351-356, L367-370), success succeeds every key (L375).
//! - `lib/kvbm-physical/src/layout/layer_separate.rs` (main): one allocation per layer,
//!   `[num_blocks, outer_dim, page_size, inner_dim]` (BlockIsFirstDim), region = page_size x
//!   inner_dim x dtype bytes at `layer_base + block * outer_dim * region + outer * region`.
//! - dynamo-memory 1.6.1 `src/nixl.rs` L46-75: `NixlDescriptor {addr, size, mem_type, device_id}`
//!   as the registration descriptor (here [`Desc`]); `dynamo_llm` 1.6.1's
//!   `block_manager::storage::ObjectStorage` registers the same {Object, addr 0, device_id = key}.

use std::ffi::c_void;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

pub use nixl_sys::{
    Agent, MemType, MemoryRegion, NixlDescriptor, NixlError, OptArgs, Params, RegDescList, XferDescList, XferOp,
    XferStatus,
};

/// KVBM's default poll interval (kvbm-engine nixl.rs L66-72).
pub const KVBM_POLL: Duration = Duration::from_millis(50);

/// A 16-token block of a small model: 32 layers x 2 (K/V) x 64 KiB (16 tokens x 2048 x 2 bytes).
pub const NUM_LAYERS: usize = 32;
pub const OUTER_DIM: usize = 2;
pub const REGION: usize = 16 * 2048 * 2;
pub const BLOCK: usize = NUM_LAYERS * OUTER_DIM * REGION; // 4 MiB

/// The 128-bit sequence hash (Dynamo's `PositionalLineageHash`) -> OBJ device_id, as
/// kvbm-engine nixl.rs L78-81 folds it.
pub fn hash_to_device_id(hash: u128) -> u64 {
    (hash as u64) ^ ((hash >> 64) as u64)
}

/// A registration or transfer descriptor, the shape of dynamo-memory 1.6.1's `NixlDescriptor`.
#[derive(Debug, Clone, Copy)]
pub struct Desc {
    pub addr: usize,
    pub size: usize,
    pub mem_type: MemType,
    pub device_id: u64,
}

impl MemoryRegion for Desc {
    unsafe fn as_ptr(&self) -> *const u8 {
        self.addr as *const u8
    }
    fn size(&self) -> usize {
        self.size
    }
}

impl NixlDescriptor for Desc {
    fn mem_type(&self) -> MemType {
        self.mem_type
    }
    fn device_id(&self) -> u64 {
        self.device_id
    }
}

/// Page-aligned host memory (KVBM's system storage is page-aligned too).
pub struct HostBuf {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: a plain heap allocation owned by this value; callers synchronize access through NIXL's
// request completion.
unsafe impl Send for HostBuf {}
// SAFETY: as above.
unsafe impl Sync for HostBuf {}

impl HostBuf {
    pub fn new(len: usize) -> HostBuf {
        let mut p: *mut c_void = std::ptr::null_mut();
        // SAFETY: posix_memalign writes an allocation of `len` bytes into `p` or fails.
        let rc = unsafe { libc_posix_memalign(&mut p, 4096, len) };
        assert_eq!(rc, 0, "posix_memalign({len})");
        // SAFETY: `p` holds `len` writable bytes; touch every page now, not inside a timed run.
        unsafe { std::ptr::write_bytes(p as *mut u8, 0, len) };
        HostBuf { ptr: p as *mut u8, len }
    }
    pub fn addr(&self) -> usize {
        self.ptr as usize
    }
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: `ptr` holds `len` initialized bytes for the life of `self`.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as above, and `&mut self` is unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
    /// The DRAM registration of the whole buffer (KVBM registers each layout allocation once).
    pub fn desc(&self) -> Desc {
        Desc { addr: self.addr(), size: self.len, mem_type: MemType::Dram, device_id: 0 }
    }
}

impl Drop for HostBuf {
    fn drop(&mut self) {
        // SAFETY: allocated by posix_memalign in `new`, freed once.
        unsafe { libc_free(self.ptr as *mut c_void) };
    }
}

extern "C" {
    #[link_name = "posix_memalign"]
    fn libc_posix_memalign(memptr: *mut *mut c_void, alignment: usize, size: usize) -> i32;
    #[link_name = "free"]
    fn libc_free(p: *mut c_void);
}

/// KVBM's two host layouts of `num_blocks` blocks.
pub enum Layout {
    /// One allocation per layer, `[num_blocks, outer_dim, page, inner]` in each.
    LayerSeparate { layers: Vec<HostBuf>, num_blocks: usize },
    /// One allocation, `[num_blocks, layers, outer_dim, page, inner]`: a block is contiguous.
    FullyContiguous { buf: HostBuf, num_blocks: usize },
}

impl Layout {
    pub fn layer_separate(num_blocks: usize) -> Layout {
        let layers = (0..NUM_LAYERS).map(|_| HostBuf::new(num_blocks * OUTER_DIM * REGION)).collect();
        Layout::LayerSeparate { layers, num_blocks }
    }
    pub fn fully_contiguous(num_blocks: usize) -> Layout {
        Layout::FullyContiguous { buf: HostBuf::new(num_blocks * BLOCK), num_blocks }
    }
    pub fn is_fully_contiguous(&self) -> bool {
        matches!(self, Layout::FullyContiguous { .. })
    }
    pub fn num_blocks(&self) -> usize {
        match self {
            Layout::LayerSeparate { num_blocks, .. } | Layout::FullyContiguous { num_blocks, .. } => *num_blocks,
        }
    }
    /// kvbm-physical's `memory_region(block, layer, outer)`: (address, size).
    pub fn memory_region(&self, block: usize, layer: usize, outer: usize) -> (usize, usize) {
        assert!(block < self.num_blocks() && layer < NUM_LAYERS && outer < OUTER_DIM);
        match self {
            Layout::LayerSeparate { layers, .. } => {
                (layers[layer].addr() + block * OUTER_DIM * REGION + outer * REGION, REGION)
            }
            Layout::FullyContiguous { buf, .. } => {
                (buf.addr() + block * BLOCK + (layer * OUTER_DIM + outer) * REGION, REGION)
            }
        }
    }
    /// Every allocation, for DRAM registration.
    pub fn buffers(&self) -> Vec<&HostBuf> {
        match self {
            Layout::LayerSeparate { layers, .. } => layers.iter().collect(),
            Layout::FullyContiguous { buf, .. } => vec![buf],
        }
    }
    /// A block's bytes in the object's order (regions by layer, then outer).
    pub fn block_bytes(&self, block: usize) -> Vec<u8> {
        let mut v = Vec::with_capacity(BLOCK);
        for l in 0..NUM_LAYERS {
            for o in 0..OUTER_DIM {
                let (a, n) = self.memory_region(block, l, o);
                // SAFETY: the region lies inside one of this layout's live allocations.
                v.extend_from_slice(unsafe { std::slice::from_raw_parts(a as *const u8, n) });
            }
        }
        v
    }
    /// Fills a block with bytes derived from `seed` (so a misplaced region cannot match).
    pub fn fill_block(&mut self, block: usize, seed: u64) {
        let mut x = seed | 1;
        for l in 0..NUM_LAYERS {
            for o in 0..OUTER_DIM {
                let (a, n) = self.memory_region(block, l, o);
                // SAFETY: the region lies inside one of this layout's allocations, owned mutably.
                let s = unsafe { std::slice::from_raw_parts_mut(a as *mut u8, n) };
                for chunk in s.chunks_mut(8) {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let b = x.to_le_bytes();
                    chunk.copy_from_slice(&b[..chunk.len()]);
                }
            }
        }
    }
    /// Sets every byte of a block to `v`.
    pub fn set_block(&mut self, block: usize, v: u8) {
        for l in 0..NUM_LAYERS {
            for o in 0..OUTER_DIM {
                let (a, n) = self.memory_region(block, l, o);
                // SAFETY: as in fill_block.
                unsafe { std::ptr::write_bytes(a as *mut u8, v, n) };
            }
        }
    }
}

/// Fresh 128-bit sequence hashes (splitmix64 over a process-wide counter and the clock).
pub fn sequence_hashes(n: usize) -> Vec<u128> {
    static SEED: OnceLock<u64> = OnceLock::new();
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let seed = *SEED.get_or_init(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64
            ^ ((std::process::id() as u64) << 32)
    });
    let mix = |mut z: u64| {
        z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    (0..n)
        .map(|_| {
            let i = NEXT.fetch_add(2, std::sync::atomic::Ordering::Relaxed);
            ((mix(seed ^ i) as u128) << 64) | mix(seed ^ (i + 1)) as u128
        })
        .collect()
}

/// The paths and environment of the run: our plugin installed as `OBJ` in a fresh directory that
/// NIXL_PLUGIN_DIR names, libdaos = daos-sim, pool from DAOS_POOL, and no DAOS_CONT (the container
/// comes from the S3 parameter `bucket`). Must run before the process's first Agent: NIXL's
/// plugin manager reads NIXL_PLUGIN_DIR once per process.
pub fn prepare_environment() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
        let plugin = std::env::var_os("NIXL_DAOS_PLUGIN_SO")
            .map(PathBuf::from)
            .unwrap_or_else(|| repo.join("target/release/libplugin_DAOS.so"));
        let sim = std::env::var_os("NIXL_DAOS_SIM_SO")
            .map(PathBuf::from)
            .unwrap_or_else(|| repo.join("target/release/libdaos_sim.so"));
        assert!(plugin.is_file(), "{} missing: cargo build --release at the repository root", plugin.display());
        assert!(!nixl_sys::is_stub(), "nixl-sys was built with its stub API: set NIXL_NO_STUBS_FALLBACK=1");
        let dir = std::env::temp_dir().join(format!("nixl-daos-kvbm-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::os::unix::fs::symlink(std::fs::canonicalize(&plugin).unwrap(), dir.join("libplugin_OBJ.so")).unwrap();
        // SAFETY (of set_var): called once, before any agent or plugin thread exists.
        std::env::set_var("NIXL_PLUGIN_DIR", &dir);
        if std::env::var_os("NIXL_DAOS_TESTBED").is_none() {
            assert!(sim.is_file(), "{} missing: cargo build --release at the repository root", sim.display());
            std::env::set_var("NIXL_DAOS_LIBDAOS", std::fs::canonicalize(&sim).unwrap());
            std::env::set_var("DAOS_POOL", "sim");
        }
        std::env::remove_var("DAOS_CONT");
        dir
    })
}

/// KVBM's S3 parameters (kvbm-config's NixlS3Config as KVBM passes them: bucket, endpoint,
/// region, addressing); nothing DAOS-specific.
pub fn s3_params(bucket: &str) -> Vec<(String, String)> {
    [
        ("bucket", bucket),
        ("endpoint_override", "http://127.0.0.1:9000"),
        ("region", "us-east-1"),
        ("use_virtual_addressing", "false"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

/// A unique bucket name for this run.
pub fn unique_bucket(tag: &str) -> String {
    format!("kvbm-{tag}-{:x}", sequence_hashes(1)[0] as u64 & 0xffff_ffff)
}

/// An agent with the OBJ backend created from `params` only (what KVBM hands NIXL).
pub fn agent_with_obj(name: &str, params: &[(String, String)]) -> Result<(Agent, nixl_sys::Backend), NixlError> {
    prepare_environment();
    let agent = Agent::new(name)?;
    let p = Params::from(params.iter().map(|(k, v)| (k.as_str(), v.as_str())))?;
    let backend = agent.create_backend("OBJ", &p)?;
    Ok((agent, backend))
}

/// How one batch ended, as KVBM sees it, and how long it took.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Every key Ok.
    Done,
    /// `create_xfer_req`/`post_xfer_req` failed: every key Err.
    PostFailed(String),
    /// `get_xfer_status` failed: every key Err.
    StatusFailed(String),
}

pub struct BatchResult {
    pub outcome: Outcome,
    /// Per key, as KVBM returns them: Ok(hash) or Err(hash).
    pub per_key: Vec<Result<u128, u128>>,
    pub elapsed: Duration,
    pub polls: usize,
    pub descriptors: usize,
}

/// kvbm-engine nixl.rs `execute_nixl_obj_transfer` (L272-376), synchronous: `poll` is the sleep
/// before each status call (KVBM: 50 ms; `Duration::ZERO` polls without sleeping).
pub fn execute_obj_transfer(
    agent: &Agent,
    op: XferOp,
    keys: &[u128],
    layout: &Layout,
    block_ids: &[usize],
    poll: Duration,
) -> BatchResult {
    assert_eq!(keys.len(), block_ids.len());
    let t0 = Instant::now();
    let mut descriptors = 0;
    let posted = (|| -> Result<(nixl_sys::XferRequest, bool), NixlError> {
        let mut src = XferDescList::new(MemType::Dram)?;
        let mut dst = XferDescList::new(MemType::Object)?;
        // Dropped when this closure returns: after the post, before completion (as KVBM does).
        let mut obj_regs = Vec::with_capacity(keys.len());
        for (key, &block) in keys.iter().zip(block_ids) {
            let dev = hash_to_device_id(*key);
            let obj = Desc { addr: 0, size: BLOCK, mem_type: MemType::Object, device_id: dev };
            obj_regs.push(agent.register_memory(&obj, None)?);
            if layout.is_fully_contiguous() {
                let (addr, _) = layout.memory_region(block, 0, 0);
                src.add_desc(addr, BLOCK, 0);
                dst.add_desc(0, BLOCK, dev);
                descriptors += 1;
            } else {
                let mut off = 0;
                for l in 0..NUM_LAYERS {
                    for o in 0..OUTER_DIM {
                        let (addr, n) = layout.memory_region(block, l, o);
                        src.add_desc(addr, n, 0);
                        dst.add_desc(off, n, dev);
                        off += n;
                        descriptors += 1;
                    }
                }
            }
        }
        let req = agent.create_xfer_req(op, &src, &dst, &agent.name(), None)?;
        let pending = agent.post_xfer_req(&req, None)?;
        Ok((req, pending))
    })();
    let fail_all = |outcome: Outcome, polls: usize| BatchResult {
        outcome,
        per_key: keys.iter().map(|k| Err(*k)).collect(),
        elapsed: t0.elapsed(),
        polls,
        descriptors,
    };
    let (req, pending) = match posted {
        Ok(p) => p,
        Err(e) => return fail_all(Outcome::PostFailed(format!("{e:?}")), 0),
    };
    let mut polls = 0;
    if pending {
        loop {
            if poll.is_zero() {
                std::thread::yield_now();
            } else {
                std::thread::sleep(poll);
            }
            polls += 1;
            match agent.get_xfer_status(&req) {
                Ok(s) if s.is_success() => break,
                Ok(_) => continue,
                Err(e) => return fail_all(Outcome::StatusFailed(format!("{e:?}")), polls),
            }
        }
    }
    drop(req);
    BatchResult {
        outcome: Outcome::Done,
        per_key: keys.iter().map(|k| Ok(*k)).collect(),
        elapsed: t0.elapsed(),
        polls,
        descriptors,
    }
}

/// What KVBM's `has_blocks` would answer through NIXL's queryMem (kvbm-engine asks an S3 HEAD
/// client instead, nixl.rs L203-211): per key Some(size) when the object exists, None when not.
pub fn has_blocks(agent: &Agent, backend: &nixl_sys::Backend, keys: &[u128]) -> Result<Vec<Option<usize>>, NixlError> {
    let mut descs = RegDescList::new(MemType::Object)?;
    for k in keys {
        descs.add_desc(0, 0, hash_to_device_id(*k));
    }
    let mut opt = OptArgs::new()?;
    opt.add_backend(backend)?;
    let resp = agent.query_mem(&descs, Some(&opt))?;
    assert_eq!(resp.len()?, keys.len(), "queryMem answers once per descriptor");
    let mut out = Vec::with_capacity(keys.len());
    for i in 0..keys.len() {
        let r = resp.get(i)?;
        out.push(match r.get_params()? {
            None => None,
            Some(p) => {
                let size = (&p)
                    .into_iter()
                    .find(|(k, _)| *k == "size")
                    .map(|(_, v)| v.parse::<usize>().expect("size is a decimal"));
                Some(size.expect("a present object reports its size"))
            }
        });
    }
    Ok(out)
}

/// MB/s (10^6 bytes per second).
pub fn mbps(bytes: usize, d: Duration) -> f64 {
    bytes as f64 / d.as_secs_f64() / 1e6
}

/// daos-sim's RPC counters, read through the very library instance the plugin dlopen'ed (same
/// absolute path, same instance). None on a real engine.
pub struct Sim {
    stats: unsafe extern "C" fn() -> *const std::ffi::c_char,
}

extern "C" {
    fn dlopen(filename: *const std::ffi::c_char, flags: i32) -> *mut c_void;
    fn dlsym(handle: *mut c_void, symbol: *const std::ffi::c_char) -> *mut c_void;
}

impl Sim {
    pub fn open() -> Option<Sim> {
        prepare_environment();
        let path = std::env::var("NIXL_DAOS_LIBDAOS").ok()?;
        if std::env::var_os("NIXL_DAOS_TESTBED").is_some() {
            return None;
        }
        let c = std::ffi::CString::new(path).ok()?;
        // SAFETY: dlopen/dlsym of a library path we control; the symbol has the declared type
        // (tests/daos-sim/src/sim.rs `daos_sim_stats`). RTLD_NOW = 2.
        unsafe {
            let h = dlopen(c.as_ptr(), 2);
            if h.is_null() {
                return None;
            }
            let f = dlsym(h, c"daos_sim_stats".as_ptr());
            if f.is_null() {
                return None;
            }
            Some(Sim {
                stats: std::mem::transmute::<*mut c_void, unsafe extern "C" fn() -> *const std::ffi::c_char>(f),
            })
        }
    }
    /// One counter of `daos_sim_stats()`'s JSON object (e.g. "update", "fetch").
    pub fn counter(&self, name: &str) -> u64 {
        // SAFETY: daos_sim_stats returns a NUL-terminated string that stays valid until the next call.
        let s = unsafe { std::ffi::CStr::from_ptr((self.stats)()) }.to_string_lossy().into_owned();
        let pat = format!("\"{name}\":");
        let at = s.find(&pat).unwrap_or_else(|| panic!("no {name} in daos_sim_stats: {s}")) + pat.len();
        s[at..].trim_start().chars().take_while(|c| c.is_ascii_digit()).collect::<String>().parse().unwrap()
    }
}
