// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//! The engine: one DAOS backend instance. Parsed config, the DAOS handles, the lanes, and the
//! request lifecycle (prep plans, post launches, check reads atomics, release frees).

use std::sync::Arc;

use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::attempt::{Attempt, Budget};
use crate::config::{Config, MAX_CHUNK_BYTES, MIN_CHUNK_BYTES};
use crate::cuda::Cuda;
use crate::daos::io::{IoDesc, Local};
use crate::daos::query;
use crate::daos::{Bound, Container, InitGuard, Library, Object, ObjectId, Pool, PoolHealth};
use crate::error::{Error, Result, Status};
use crate::evict::{self, Evictor, Posting, WriteIds};
use crate::host_memory::HostMemory;
use crate::key::{ChunkNames, ObjectKey};
use crate::lanes::{Hooks, Lanes, Op};
use crate::planner::{self, Fold, Pair};
use crate::record::Record;
use crate::registry::Registry;
use crate::stage::StagePool;
use crate::totals;
use crate::watch::MapWatch;

/// `lo` of the object holding every key of a container (the class bits go into `hi`).
/// Every engine on the same container uses it, so agents share their keys.
pub const OBJECT_LO: u64 = 0x6e69_786c_6461_6f73; // "nixldaos"

/// Container attribute recording the id of the object that holds the keys, and the layout of
/// its keys: 16 bytes (the id) for one dkey per key, as every version before chunks wrote it;
/// 24 bytes (the id, then the chunk size, little-endian) for chunks named `ChunkNames::Plain`;
/// 32 bytes (then the naming rule, little-endian: 1 = `ChunkNames::Spread`) for chunks placed
/// round the object's groups. A version that does not know a record's length refuses it at
/// create_backend ("not an object id"), so it never reads a chunked key's first chunk as the
/// whole value, nor names chunks otherwise than their writer did.
pub const OBJECT_ID_ATTR: &str = "nixl_daos.object_id";

/// The naming rule a 32-byte record names (`ChunkNames::Spread` over the object's groups).
const SPREAD_NAMES: u64 = 1;

/// Where a container's keys live: the object, the chunk size (0: one dkey per key, the
/// layout of containers first used before chunks, which stays readable as it was) and how the
/// chunks' dkeys are named.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    pub oid: ObjectId,
    pub chunk: u64,
    pub names: ChunkNames,
}

impl Layout {
    /// The layout a new container gets: `names` spread over the object's groups when `spread`.
    fn new(oid: ObjectId, chunk: u64, spread: bool) -> Layout {
        let names = match spread && chunk > 0 {
            true => ChunkNames::Spread { groups: oid.groups() },
            false => ChunkNames::Plain,
        };
        Layout { oid, chunk, names }
    }

    /// `lo` of the object holding the keys of a container laid out in chunks of `chunk` bytes
    /// (0: `OBJECT_LO`, one dkey per key), named spread or not: each layout an object of its
    /// own, so that engines of different layouts on one container (two that recorded at once,
    /// see `object_id`) miss each other's keys rather than read one layout's bytes as the
    /// other's.
    fn lo(chunk: u64, spread: bool) -> u64 {
        match chunk {
            0 => OBJECT_LO,
            c => OBJECT_LO + (u64::from(c.trailing_zeros()) << 8) + (u64::from(spread) << 16),
        }
    }

    /// `lo` of the eviction index (`crate::evict::index`), beside the keys' object: same `hi`
    /// (class and group count), so it follows the recorded id and needs no attribute of its own.
    pub fn index_id(&self) -> ObjectId {
        ObjectId { lo: self.oid.lo + 1, hi: self.oid.hi }
    }

    fn spread(&self) -> bool {
        matches!(self.names, ChunkNames::Spread { .. })
    }

    fn to_bytes(self) -> Vec<u8> {
        let mut b = self.oid.to_bytes().to_vec();
        if self.chunk > 0 {
            b.extend_from_slice(&self.chunk.to_le_bytes());
        }
        if self.spread() {
            b.extend_from_slice(&SPREAD_NAMES.to_le_bytes());
        }
        b
    }

    fn from_bytes(b: &[u8]) -> std::result::Result<Layout, String> {
        let bad = |what: String| {
            format!(
                "container attribute {OBJECT_ID_ATTR} {what}: not a record this version of nixl-daos writes or reads \
                 (a later version's layout?); use another container, or one this version laid out"
            )
        };
        let word = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"));
        let (chunk, spread) = match b.len() {
            16 => (0, false),
            24 => (word(16), false),
            32 => match word(24) {
                SPREAD_NAMES => (word(16), true),
                n => return Err(bad(format!("names its chunks by rule {n}, not 1 (spread over the object's groups)"))),
            },
            n => {
                return Err(bad(format!(
                    "holds {n} bytes, not an object id (16), an id and a chunk size (24) or those and a naming rule (32)"
                )));
            }
        };
        let oid = ObjectId::from_bytes(&b[..16]).expect("16 bytes");
        if b.len() > 16 && !(chunk.is_power_of_two() && (MIN_CHUNK_BYTES..=MAX_CHUNK_BYTES).contains(&chunk)) {
            return Err(bad(format!(
                "records the chunk size {chunk}, not a power of two from {MIN_CHUNK_BYTES} to {MAX_CHUNK_BYTES}"
            )));
        }
        // Every version wrote 16-byte records of `OBJECT_LO` too: a record naming any other `lo`
        // would put the keys in another object of the container (the one at `OBJECT_LO + 1` is
        // the index), and the index, which eviction punches in, beside that.
        if oid.lo != Layout::lo(chunk, spread) {
            return Err(bad(format!(
                "records object {:#x}.{:#x} for {}, whose object is {:#x}.*",
                oid.hi,
                oid.lo,
                match chunk {
                    0 => "one dkey per key".to_string(),
                    c => format!("chunks of {c} bytes"),
                },
                Layout::lo(chunk, spread)
            )));
        }
        Ok(Layout::new(oid, chunk, spread))
    }
}

/// The object every engine on this container uses, and its layout. The id DAOS generates encodes the class
/// and, when DAOS picks the class, a group count from the pool's size at that moment: engines
/// started before and after a pool extension would address different objects and miss each
/// other's keys. So the first engine records the id in a container attribute and every later
/// one reuses it, without generating one (on a pool with an excluded engine, generating can
/// abort the process inside libdaos, see `Object::generate_id`). The record also holds the
/// chunk size the first engine chose (`chunk_bytes`): later engines use the recorded one.
///
/// On such a degraded pool a container without a record gets a provisional id of one group,
/// not recorded: an id generated there would spread the keys over fewer groups than the
/// healthy pool gives, and the record would keep that for good.
fn object_id(
    lib: &'static Library,
    cont: &Container,
    health: Option<PoolHealth>,
    oclass: u32,
    oclass_name: Option<&str>,
    chunk: u64,
    spread: bool,
) -> Result<Layout> {
    // Unknown health (the query failed): treated as degraded, the safe side.
    let healthy = health.is_some_and(|h| !h.degraded());
    match cont.get_attr(OBJECT_ID_ATTR)? {
        Some(bytes) => {
            let recorded = Layout::from_bytes(&bytes).map_err(Error::InvalidArg)?;
            if recorded.chunk != chunk || (chunk > 0 && recorded.spread() != spread) {
                tracing::info!(
                    "container {:?} keeps its keys in chunks of {} bytes (0: one dkey per key){}, as recorded when it \
                     was first used; chunk_bytes={chunk} and spread_chunks={spread} apply only to new containers",
                    cont.label,
                    recorded.chunk,
                    match (recorded.chunk, recorded.names.spread_groups()) {
                        (0, _) => "",
                        (_, Some(_)) => " spread over the object's groups",
                        (_, None) => " named where their hash falls",
                    }
                );
            }
            let oid = recorded.oid;
            // Only to say when the record differs from what a new one would be; on a healthy
            // pool only.
            let wanted = if healthy { Object::generate_id(lib, cont, oid.lo, oclass, true).ok() } else { None };
            match (wanted, oclass_name) {
                (Some(w), Some(name)) if w != oid => tracing::warn!(
                    "container {:?} already keeps its keys in object {:#x}.{:#x}, created with another class than oclass={name:?}; \
                     using it (its class stays), so existing keys remain visible",
                    cont.label, oid.hi, oid.lo
                ),
                (Some(w), _) if oid.groups() < w.groups() => tracing::warn!(
                    // Recorded by an older plugin (no sharding hint) or before the pool grew.
                    "container {:?} keeps its keys in object {:#x}.{:#x} of {} redundancy group(s), where a new one would get {}: \
                     its keys stay on fewer targets; to spread them, use a new container (its keys are a cache: \
                     daos cont destroy + create, or another container label)",
                    cont.label, oid.hi, oid.lo, oid.groups(), w.groups()
                ),
                _ => {}
            }
            Ok(recorded)
        }
        // Nothing recorded and nothing may be: no writer has used this container yet, so
        // every key reads as a miss; the object is the one a writer would record first.
        None if !cont.writable => {
            Ok(Layout::new(Object::generate_id(lib, cont, Layout::lo(chunk, spread), oclass, healthy)?, chunk, spread))
        }
        None if healthy => {
            let wanted =
                Layout::new(Object::generate_id(lib, cont, Layout::lo(chunk, spread), oclass, true)?, chunk, spread);
            cont.set_attr(OBJECT_ID_ATTR, &wanted.to_bytes())?;
            Ok(wanted)
        }
        None => {
            let provisional = Object::generate_id(lib, cont, Layout::lo(chunk, spread), oclass, false)?;
            tracing::warn!(
                "container {:?} has no object yet and its pool is degraded ({}): using a provisional object of one \
                 redundancy group, not recorded; the first engine started on the healthy pool records the container's \
                 object, and engines started before then keep their keys apart from it until they are restarted",
                cont.label,
                health.map_or("its state is unknown".to_string(), |h| format!(
                    "{} of {} targets excluded",
                    h.disabled, h.targets
                )),
            );
            Ok(Layout::new(provisional, chunk, spread))
        }
    }
}

/// Eviction's counters (`Engine::eviction`): writes recorded in the index and flushed to it,
/// records dropped while the index could not be written, segments claimed, keys and bytes
/// evicted, keys kept because they were rewritten since, check-and-punch transactions restarted
/// by a conflicting write, keys a write left in part (punched), keys skipped for an error,
/// writes refused for space, passes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EvictionStats {
    pub recorded: u64,
    pub flushed: u64,
    pub dropped: u64,
    pub segments: u64,
    pub evicted_keys: u64,
    pub evicted_bytes: u64,
    pub kept_rewritten: u64,
    pub tx_restarts: u64,
    pub torn: u64,
    pub skipped_errors: u64,
    pub refused_for_space: u64,
    pub passes: u64,
}

/// Longest an engine's teardown waits for operations DAOS still holds.
const TEARDOWN_GRACE: Duration = Duration::from_millis(1000);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemType {
    Dram,
    Vram,
    Blk,
    Obj,
    File,
}

impl MemType {
    /// NIXL's `nixl_mem_t` numbering (`ND_MEM_*` in include/nixl_daos.h, checked by ffi's tests).
    pub fn from_raw(v: i32) -> Option<MemType> {
        Some(match v {
            0 => MemType::Dram,
            1 => MemType::Vram,
            2 => MemType::Blk,
            3 => MemType::Obj,
            4 => MemType::File,
            _ => return None,
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum XferOp {
    Read,
    Write,
}

impl XferOp {
    /// NIXL's `nixl_xfer_op_t` numbering (`ND_OP_*` in include/nixl_daos.h, checked by ffi's tests).
    pub fn from_raw(v: i32) -> Option<XferOp> {
        Some(match v {
            0 => XferOp::Read,
            1 => XferOp::Write,
            _ => return None,
        })
    }
}

pub use crate::registry::Registration;

/// A NIXL descriptor as the engine sees it.
#[derive(Clone, Copy, Debug)]
pub struct Desc<'a> {
    pub addr: u64,
    pub len: u64,
    pub dev_id: u64,
    pub reg: Option<&'a Registration>,
}

pub struct Request {
    op: XferOp,
    /// Where its local buffers live (host memory, or one CUDA device's).
    local: Local,
    /// One lock for the plan and the current posting: a post holds it while it submits, so a
    /// concurrent post, check or release of the same request waits for the submission.
    state: Mutex<RequestState>,
}

struct RequestState {
    folds: Vec<Fold>,
    /// Distinct keys and bytes of the plan, for the process totals (`crate::totals`).
    keys: usize,
    bytes: u64,
    current: Option<Arc<Attempt>>,
}

impl Request {
    fn lock(&self) -> parking_lot::MutexGuard<'_, RequestState> {
        self.state.lock()
    }

    /// How many DAOS RPCs one posting of this request sends.
    pub fn fold_count(&self) -> usize {
        self.lock().folds.len()
    }
}

/// The DAOS handles of an engine; field order is close order.
struct Handles {
    obj: Arc<Object>,
    _index: Arc<Object>,
    layout: Layout,
    _cont: Arc<Container>,
    _pool: Arc<Pool>,
    _init: InitGuard,
}

pub struct Engine {
    pub cfg: Config,
    /// Stopped after the lanes (their last completions still record keys) and before the
    /// handles close; it holds its own references to them, should it outlive its grace.
    evictor: Option<Evictor>,
    /// The id every write posting stores in its records (`crate::record`), eviction on or off.
    ids: WriteIds,
    lanes: Lanes,
    budget: Arc<Budget>,
    /// The staging buffers every transfer goes through (`stage_bytes`).
    stage: Arc<StagePool>,
    /// Live OBJ registrations by devId, to refuse ambiguous ones.
    registry: Registry,
    /// DRAM registered read-only (`crate::host_memory`).
    host_memory: HostMemory,
    /// Refreshes the pool map once requests time out (stopped after the lanes).
    watch: Option<MapWatch>,
    poke: Arc<dyn Fn() + Send + Sync>,
    /// Closed after the lanes stop; left open when operations were left inside DAOS, since
    /// closing the container or pool talks to the (presumably dead) server.
    handles: Option<Handles>,
    lib: &'static Library,
    /// The process that created the engine: a forked child must not touch its DAOS state.
    pid: u32,
    /// Why this engine may only read (its container or pool ACL), when it may: every WRITE
    /// is refused with it.
    read_only: Option<String>,
    /// The CUDA driver, when this host has a usable one (`crate::cuda`): VRAM is supported.
    cuda: Option<&'static Cuda>,
}

impl Engine {
    pub fn create(cfg: Config) -> Result<Engine> {
        crate::host::init();
        let lib = Library::load(&cfg.daos_lib)?;
        // A dead server must not block create_backend: every call below shares this bound.
        let bound = Bound::from_now(cfg.timeout_ms);
        let t0 = Instant::now();
        let (pool, init) = Pool::connect(lib, &cfg.pool, &cfg.system, bound).map_err(|e| {
            let check = if matches!(e, Error::Timeout { .. }) {
                "Check that the DAOS servers are up (`dmg system query`). If DAOS excluded an engine \
                 lately, daos_agent may still hand its address to new processes, each dead pick costing an \
                 RPC timeout: refresh its cache (`kill -USR2` on daos_agent) or set `cache_expiration: 1` in \
                 daos_agent.yml"
            } else {
                "Check the label (`dmg pool list`) and that daos_agent runs on this host"
            };
            if e.is_no_perm() {
                let hint = crate::daos::acl::no_perm_hint("daos_pool_connect2", &cfg.pool, None);
                return Error::InvalidArg(format!(
                    "cannot connect to DAOS pool {:?} of system {:?}: {e}: {hint}",
                    cfg.pool, cfg.system
                ))
                .with_der(e.der());
            }
            Error::InvalidArg(format!(
                "cannot connect to DAOS pool {:?} of system {:?}: {e}. {check}",
                cfg.pool, cfg.system
            ))
            .with_der(e.der())
        })?;
        tracing::debug!(pool = %cfg.pool, "create_backend: pool connected after {:?}", t0.elapsed());
        // A call that timed out leaves the servers unanswered: the handles opened before it stay
        // open rather than wait on a close (create_backend must end by its deadline).
        let abandon_on_timeout = |e: &Error, pool: &Pool, cont: Option<&Container>| {
            if matches!(e, Error::Timeout { .. }) {
                pool.abandon();
                if let Some(c) = cont {
                    c.abandon();
                }
            }
        };
        if !cfg.cont_acl.is_empty() && !cfg.create_container {
            tracing::warn!(
                "DAOS backend: cont_acl applies to a container this plugin creates, and create_container is off"
            );
        }
        let acl = crate::daos::acl::creation_acl(&cfg.cont_acl);
        let cont = Container::open(lib, &pool, &cfg.container, cfg.create_container, &acl, bound).map_err(|e| {
            abandon_on_timeout(&e, &pool, None);
            let hint = match &e {
                e if e.is_nonexistent() => {
                    "; create it (`daos cont create <pool> <label>`) or pass create_container=true".to_string()
                }
                Error::Daos { call, .. } if e.is_no_perm() => {
                    format!(": {}", crate::daos::acl::no_perm_hint(call, &cfg.pool, Some(&cfg.container)))
                }
                _ => String::new(),
            };
            Error::InvalidArg(format!("cannot open container {:?} in pool {:?}: {e}{hint}", cfg.container, cfg.pool))
                .with_der(e.der())
        })?;
        let oclass = match &cfg.oclass {
            None => 0,
            Some(name) => lib.oclass_id(name).ok_or_else(|| Error::Param {
                name: "oclass",
                value: name.clone(),
                expected: "an object class DAOS knows, such as SX, RP_2GX, RP_3GX or EC_2P1GX, or empty".into(),
            })?,
        };
        tracing::debug!(container = %cfg.container, "create_backend: container open after {:?}", t0.elapsed());
        // Also installs the newest pool map before anything is placed.
        let health = pool.health(bound).inspect_err(|e| tracing::warn!(pool = %cfg.pool, "{e}")).ok();
        let layout = object_id(lib, &cont, health, oclass, cfg.oclass.as_deref(), cfg.chunk_bytes, cfg.spread_chunks)
            .inspect_err(|e| abandon_on_timeout(e, &pool, Some(&cont)))?;
        let oid = layout.oid;
        tracing::debug!(health = ?health, "create_backend: object id after {:?}", t0.elapsed());
        let obj = Arc::new(Object::open(lib, &cont, oid)?);
        let index = Arc::new(Object::open(lib, &cont, layout.index_id())?);
        let pool = Arc::new(pool);
        let cont = Arc::new(cont);
        // A user who may only read gets reads; its writes are refused before they reach DAOS
        // (`prep`) and it evicts nothing (it could not punch), said once here.
        let read_only =
            (!cont.writable).then(|| crate::daos::acl::read_only_hint(&cfg.pool, &cfg.container, pool.writable));
        if let Some(why) = &read_only {
            tracing::warn!("DAOS backend: {why}");
        }
        let evictor = if cfg.evict.enabled && read_only.is_none() {
            Some(Evictor::start(
                evict::Settings::from_config(&cfg.evict),
                lib.init()?,
                pool.clone(),
                cont.clone(),
                obj.clone(),
                index.clone(),
            )?)
        } else {
            None
        };
        let watch = MapWatch::start(pool.clone(), lib.init()?, health)?;
        let poke = watch.poker();
        let budget = Arc::new(Budget::new(cfg.max_inflight));
        let stage = StagePool::new(cfg.stage_bytes as usize);
        let lanes = Lanes::start(
            lib,
            obj.clone(),
            cfg.num_queues,
            budget.clone(),
            TEARDOWN_GRACE.min(Duration::from_millis(cfg.timeout_ms)),
            Hooks {
                recorder: evictor.as_ref().map(|e| e.recorder.clone()),
                trouble: Some(poke.clone()),
                // A write refused for space may wait for eviction's room as long as DAOS takes
                // to give punched space back (evict_reclaim_ms), whatever its deadline.
                space_wait: Duration::from_millis(cfg.evict.reclaim_ms),
                stage: stage.clone(),
            },
        )?;
        tracing::info!(
            pool = %cfg.pool, container = %cfg.container, lib = %lib.path, stage_bytes = cfg.stage_bytes,
            queues = cfg.num_queues, timeout_ms = cfg.timeout_ms, read_timeout_ms = cfg.read_timeout_ms, object = %format!("{:#x}.{:#x}", oid.hi, oid.lo),
            groups = oid.groups(), chunk_bytes = layout.chunk, evict = cfg.evict.enabled, keep_free = cfg.evict.keep_free, "DAOS backend ready"
        );
        let handles = Some(Handles { obj, _index: index, layout, _cont: cont, _pool: pool, _init: init });
        Ok(Engine {
            cfg,
            evictor,
            ids: WriteIds::default(),
            lanes,
            budget,
            stage,
            registry: Registry::default(),
            host_memory: HostMemory::default(),
            watch: Some(watch),
            poke,
            handles,
            lib,
            pid: std::process::id(),
            read_only,
            cuda: Cuda::probe(),
        })
    }

    /// registerMem: DRAM is checked against the process's mappings (`crate::host_memory`) and
    /// not kept; an OBJ registration copies its key (`metaInfo`, or the devId) and is refused
    /// when it would make NIXL's routing by devId ambiguous (`crate::registry`). For OBJ, `addr`
    /// and `len` are the registered offsets inside the key.
    pub fn register(
        &self,
        mem: MemType,
        dev_id: u64,
        addr: u64,
        len: u64,
        meta: &[u8],
    ) -> Result<Option<Box<Registration>>> {
        match mem {
            // Checked against the mappings: copies into and out of it run on the plugin's
            // threads.
            MemType::Dram => self.host_memory.register(addr, len).map(|()| None),
            MemType::Obj => {
                let key = ObjectKey::from_registration(meta, dev_id);
                key.check_reserved().map_err(Error::InvalidArg)?;
                Ok(Some(Box::new(self.registry.register(dev_id, addr, len, key)?)))
            }
            // A device range is checked (device memory of the device devId names), and its
            // device's context retained, at registration: nothing to keep per registration.
            MemType::Vram => {
                let cuda = self.cuda.ok_or_else(|| {
                    Error::NotSupported(format!(
                        "the DAOS backend found no usable CUDA driver ({} or the library {} names), so it \
                         cannot register VRAM; register DRAM buffers",
                        "libcuda.so.1",
                        crate::cuda::LIBCUDA_ENV
                    ))
                })?;
                cuda.device(dev_id)?.check_range(addr, len)?;
                Ok(None)
            }
            MemType::File | MemType::Blk => Err(Error::NotSupported(format!(
                "the DAOS backend moves data between DRAM and OBJ; {mem:?} memory is not supported (use DRAM buffers and OBJ keys)"
            ))),
        }
    }

    pub fn prep(
        &self,
        op: XferOp,
        local_mem: MemType,
        local: &[Desc],
        remote_mem: MemType,
        remote: &[Desc],
    ) -> Result<Box<Request>> {
        let local_at = match (local_mem, self.cuda) {
            (MemType::Dram, _) => Local::Host,
            (MemType::Vram, None) => {
                return Err(Error::NotSupported(
                    "the DAOS backend cannot transfer VRAM on this host (no usable CUDA driver): use DRAM buffers".into(),
                ))
            }
            (MemType::Vram, Some(cuda)) => {
                // One device per request: its copies run in that device's context.
                let dev = local.first().map_or(0, |d| d.dev_id);
                if let Some(other) = local.iter().find(|d| d.dev_id != dev) {
                    return Err(Error::InvalidArg(format!(
                        "VRAM descriptors of devices {dev} and {} in one request: post one request per device",
                        other.dev_id
                    )));
                }
                Local::Device(cuda.device(dev)?)
            }
            _ => {
                return Err(Error::InvalidArg(format!(
                    "the DAOS backend moves data between local DRAM or VRAM and OBJ keys; got {local_mem:?} -> {remote_mem:?}"
                )))
            }
        };
        if remote_mem != MemType::Obj {
            return Err(Error::InvalidArg(format!(
                "the DAOS backend moves data between local DRAM or VRAM and OBJ keys; got {local_mem:?} -> {remote_mem:?}"
            )));
        }
        if let (XferOp::Write, Some(why)) = (op, &self.read_only) {
            return Err(Error::ReadOnly(why.clone()));
        }
        if (op, local_mem) == (XferOp::Read, MemType::Dram) {
            self.host_memory.check_read_into(local.iter().map(|d| (d.addr, d.len)))?;
        }
        if local.len() != remote.len() {
            return Err(Error::InvalidArg(format!(
                "{} local descriptors but {} OBJ descriptors; they must pair one to one",
                local.len(),
                remote.len()
            )));
        }
        let mut pairs = Vec::with_capacity(local.len());
        for (i, (l, r)) in local.iter().zip(remote).enumerate() {
            if l.len != r.len {
                return Err(Error::InvalidArg(format!(
                    "descriptor {i}: local length {} differs from OBJ length {}",
                    l.len, r.len
                )));
            }
            let reg = r.reg.ok_or_else(|| {
                Error::InvalidArg(format!("descriptor {i}: OBJ devId {} has no DAOS registration", r.dev_id))
            })?;
            pairs.push(Pair { addr: l.addr, offset: r.addr, len: r.len, key: reg.key.clone() });
        }
        let keys = pairs.iter().map(|p| &p.key).collect::<std::collections::HashSet<_>>().len();
        let bytes = pairs.iter().map(|p| p.len).sum();
        let folds = planner::plan(pairs, self.layout().chunk, self.layout().names)?;
        Ok(Box::new(Request {
            op,
            local: local_at,
            state: Mutex::new(RequestState { folds, keys, bytes, current: None }),
        }))
    }

    /// Launches a posting of `req`. The request's lock is held until every fold is handed to
    /// the lanes, so a concurrent post of the same request gets `RepostActive` and a concurrent
    /// release waits for the submission.
    pub fn post(&self, req: &Request) -> Result<Status> {
        let mut st = req.lock();
        if let Some(previous) = st.current.as_ref() {
            // Refused while the previous posting is live (the caller still waits for it); once
            // it ended, what DAOS still holds of it lands in the plugin's buffers alone.
            if !previous.retire() {
                return Err(Error::RepostActive);
            }
        }
        let timeout = match req.op {
            XferOp::Read => self.cfg.read_timeout_ms,
            XferOp::Write => self.cfg.timeout_ms,
        };
        let st = &mut *st;
        let attempt = Arc::new(
            Attempt::new(st.folds.len(), Duration::from_millis(timeout), Some(self.budget.clone()))
                .owing_to(self.stage.clone()),
        );
        st.current = Some(attempt.clone());
        if st.folds.is_empty() {
            return Ok(Status::Success);
        }
        // One id for the whole posting: every dkey it writes records it (eviction on or off,
        // so that an evicting engine sharing the container sees the rewrite), a read accepts a
        // key only when all its dkeys name the same id, and eviction punches the key only
        // while it still holds it. The key is recorded for eviction once none of its folds of
        // this posting can still land (`Posting`).
        let (id, posting) = match req.op {
            XferOp::Write => {
                let id = self.ids.next();
                let posting = self
                    .evictor
                    .as_ref()
                    .map(|e| Arc::new(Posting::new(e.recorder.clone(), id, st.folds.iter().map(|f| &f.key))));
                (id, posting)
            }
            XferOp::Read => (0, None),
        };
        let mut ops = Vec::with_capacity(st.folds.len());
        for f in &st.folds {
            let io = match (req.op, f.extents.is_empty()) {
                (XferOp::Write, _) => IoDesc::update(f.key.clone(), &f.extents, Record { id, len: f.value_len }),
                (XferOp::Read, false) => IoDesc::fetch(f.key.clone(), &f.extents),
                (XferOp::Read, true) => IoDesc::record(f.key.clone()),
            }
            .on(req.local);
            ops.push(Op::new(io, Some(attempt.clone()), posting.clone()));
        }
        self.lanes.submit_all(ops);
        Ok(Status::InProgress)
    }

    /// Never blocks on DAOS: reads the attempt's counters and its deadline.
    pub fn check(&self, req: &Request) -> Result<Status> {
        let (attempt, keys, bytes) = match &*req.lock() {
            RequestState { current: Some(a), keys, bytes, .. } => (a.clone(), *keys, *bytes),
            _ => return Ok(Status::NotPosted),
        };
        let status = attempt.status();
        if !matches!(status, Ok(Status::InProgress)) {
            if let Some(o) = attempt.take_outcome() {
                totals::request(req.op, o, keys, bytes);
            }
        }
        status.inspect_err(|e| match e {
            Error::Timeout { .. } => {
                // Only when DAOS holds a fold: a request that timed out queued behind the
                // budget says the engine is loaded, not that the pool changed.
                if attempt.in_daos() > 0 {
                    (self.poke)();
                }
                tracing::error!(
                    pool = %self.cfg.pool,
                    "DAOS transfer failed: {e}; the request's buffers are the caller's again (what DAOS still \
                     holds of it lands in the plugin's own)"
                )
            }
            e => tracing::error!(pool = %self.cfg.pool, "DAOS transfer failed: {e}"),
        })
    }

    /// Release: ends the request's posting at once. Nothing of it touches the caller's buffers
    /// afterwards (what DAOS still holds completes into the plugin's staging buffers), so the
    /// request may be freed and its buffers reused as soon as this returns.
    pub fn release(&self, req: &Request) -> Result<()> {
        if let Some(a) = req.lock().current.clone() {
            a.cancel();
        }
        Ok(())
    }

    /// Length of each key, None where it has no value (`queryMem`): from its record
    /// (`crate::record`), which names the whole value's length in any layout. One fetch of the
    /// key's first dkey per key; a value of several chunks then has the records of its other
    /// chunks fetched too (one round for all keys of the call), and is present only when every
    /// chunk names the write its first one names: a write that landed in part (its writer
    /// killed between two chunks) is absent, as a read of it would be a miss. Up to
    /// max_inflight fetches run at once, driven by the calling thread; the lanes only reap the
    /// ones it gives up on.
    ///
    /// A key holding `\0nixl-daos.` (the chunks' dkeys, refused at registerMem) is answered None
    /// without a fetch, with a warning: no caller's key can be there.
    pub fn query_sizes(&self, keys: &[ObjectKey]) -> Result<Vec<Option<u64>>> {
        let bound = Bound::from_now(self.cfg.timeout_ms);
        let ask = |dkeys: &[ObjectKey]| {
            query::query_records(self.lib, self.object(), dkeys, self.cfg.max_inflight, bound, |left| {
                self.lanes.adopt_queries(left)
            })
        };
        let asked: Vec<usize> = (0..keys.len())
            .filter(|&i| match keys[i].check_reserved() {
                Ok(()) => true,
                Err(e) => {
                    tracing::warn!("queryMem: {e}; answered as absent");
                    false
                }
            })
            .collect();
        let plain: Vec<ObjectKey> = asked.iter().map(|&i| keys[i].clone()).collect();
        let mut records = ask(&plain)?;
        let Layout { chunk, names, .. } = self.layout();
        if chunk > 0 {
            let later: Vec<(usize, ObjectKey)> = records
                .iter()
                .enumerate()
                .filter_map(|(n, r)| r.filter(|r| r.len > chunk).map(|r| (n, r.len.div_ceil(chunk))))
                .flat_map(|(n, chunks)| (1..chunks).map(move |c| (n, c)))
                .map(|(n, c)| (n, plain[n].chunk(c, names)))
                .collect();
            if !later.is_empty() {
                let dkeys: Vec<ObjectKey> = later.iter().map(|(_, d)| d.clone()).collect();
                for ((n, _), got) in later.iter().zip(ask(&dkeys)?) {
                    if got.map(|g| g.id) != records[*n].map(|r| r.id) {
                        records[*n] = None;
                    }
                }
            }
        }
        let mut sizes = vec![None; keys.len()];
        for (&i, r) in asked.iter().zip(records) {
            sizes[i] = r.map(|r| r.len);
        }
        Ok(sizes)
    }

    /// Removes each key's value: its first dkey, then its later chunks' dkeys. The first dkey's
    /// record is what every read and `queryMem` checks, so once it is gone the key is absent for
    /// every reader; a call that fails after it leaves only unreadable chunks (space, not data).
    /// NIXL has no call for it; `nixl-daos doctor` removes its test key this way. A key without a
    /// value, or holding `\0nixl-daos.`, is left alone. Refused on a read-only backend.
    pub fn remove_keys(&self, keys: &[ObjectKey]) -> Result<()> {
        if let Some(why) = &self.read_only {
            return Err(Error::ReadOnly(why.clone()));
        }
        let sizes = self.query_sizes(keys)?;
        let Layout { chunk, names, .. } = self.layout();
        let bound = Bound::from_now(self.cfg.timeout_ms);
        // Held across the punches, as queries hold it: the process's exit waits for them.
        let Some(_drive) = crate::host::drive() else { return Err(Error::ShuttingDown) };
        for (key, size) in keys.iter().zip(sizes) {
            let Some(len) = size else { continue };
            self.object().punch_dkey(key.as_bytes(), None, bound)?;
            let chunks = if chunk > 0 { len.div_ceil(chunk) } else { 1 };
            for c in 1..chunks {
                self.object().punch_dkey(key.chunk(c, names).as_bytes(), None, bound)?;
            }
        }
        Ok(())
    }

    /// Bytes of staging buffers in use now (transfers in flight, and answers DAOS still owes to
    /// requests that ended): at most `stage_bytes`, or one transfer's when it is larger.
    /// Whether VRAM registrations and transfers work here (a usable CUDA driver was found).
    pub fn supports_vram(&self) -> bool {
        self.cuda.is_some()
    }

    pub fn staging_in_use(&self) -> usize {
        self.stage.in_use()
    }

    /// Operations launched into DAOS and not yet completed (abandoned size queries included).
    pub fn inflight(&self) -> usize {
        self.lanes.inflight()
    }

    pub fn object(&self) -> &Object {
        &self.handles.as_ref().expect("handles live as long as the engine").obj
    }

    /// `Err(Forked)` in a child forked after the engine was created: libdaos's network
    /// context is shared with the parent and the lane threads did not survive the fork.
    pub fn check_process(&self) -> Result<()> {
        if std::process::id() == self.pid {
            Ok(())
        } else {
            Err(Error::Forked { pid: self.pid })
        }
    }

    /// What eviction did so far; None with eviction off.
    pub fn eviction(&self) -> Option<EvictionStats> {
        let c = &self.evictor.as_ref()?.recorder.counters;
        let n = |a: &std::sync::atomic::AtomicU64| a.load(std::sync::atomic::Ordering::Relaxed);
        Some(EvictionStats {
            recorded: n(&c.recorded),
            flushed: n(&c.flushed),
            dropped: n(&c.dropped),
            segments: n(&c.segments_claimed),
            evicted_keys: n(&c.evicted_keys),
            evicted_bytes: n(&c.evicted_bytes),
            kept_rewritten: n(&c.kept_rewritten),
            tx_restarts: n(&c.tx_restarts),
            torn: n(&c.torn),
            skipped_errors: n(&c.skipped_errors),
            refused_for_space: n(&c.nospace),
            passes: n(&c.passes),
        })
    }

    /// Id of the object holding the keys (the one recorded in the container).
    pub fn object_id(&self) -> ObjectId {
        self.layout().oid
    }

    /// The container's layout: its object and chunk size (the recorded ones).
    pub fn layout(&self) -> Layout {
        self.handles.as_ref().expect("handles live as long as the engine").layout
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        let leaked = self.lanes.shutdown();
        let (_, pinned_peak) = self.stage.pinned_bytes();
        if pinned_peak > 0 {
            tracing::info!(
                pool = %self.cfg.pool, stage_bytes = self.cfg.stage_bytes,
                "DAOS backend: staging buffers pinned for GPU copies: {pinned_peak} bytes at most"
            );
        }
        if let Some(mut w) = self.watch.take() {
            w.stop(TEARDOWN_GRACE);
        }
        if let Some(mut e) = self.evictor.take() {
            e.stop(TEARDOWN_GRACE.min(Duration::from_millis(self.cfg.timeout_ms)));
        }
        if leaked > 0 {
            std::mem::forget(self.handles.take());
            tracing::warn!(pool = %self.cfg.pool, container = %self.cfg.container, "DAOS backend closed without closing its DAOS handles");
        } else {
            drop(self.handles.take());
            tracing::debug!(pool = %self.cfg.pool, container = %self.cfg.container, "DAOS backend closed");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An id of `groups` groups at `lo`, as DAOS encodes it (groups in bits 32-47 of `hi`).
    fn oid(lo: u64, groups: u64) -> ObjectId {
        ObjectId { lo, hi: (1 << 56) | (groups << 32) | 7 }
    }

    #[test]
    fn layout_records_read_back_as_written() {
        for (layout, len) in [
            (Layout::new(oid(OBJECT_LO, 2), 0, true), 16),
            (Layout::new(oid(Layout::lo(1 << 22, false), 2), 1 << 22, false), 24),
            (Layout::new(oid(Layout::lo(1 << 22, true), 2), 1 << 22, true), 32),
        ] {
            let b = layout.to_bytes();
            assert_eq!(b.len(), len, "{layout:?}");
            assert_eq!(Layout::from_bytes(&b).unwrap(), layout);
        }
        // No chunks: nothing to name, whatever spread_chunks says.
        assert_eq!(Layout::new(oid(OBJECT_LO, 2), 0, true).names, ChunkNames::Plain);
        // Spread names go round the recorded object's groups, not today's pool's.
        let spread = Layout::from_bytes(&Layout::new(oid(Layout::lo(1 << 16, true), 6), 1 << 16, true).to_bytes());
        assert_eq!(spread.unwrap().names, ChunkNames::Spread { groups: 6 });
        // Each layout has an object of its own.
        let los =
            [Layout::lo(0, false), Layout::lo(1 << 22, false), Layout::lo(1 << 22, true), Layout::lo(1 << 16, true)];
        assert!(los.iter().enumerate().all(|(i, a)| los[i + 1..].iter().all(|b| a != b && a + 1 != *b && b + 1 != *a)));
    }

    #[test]
    fn layout_records_this_version_cannot_name_are_refused() {
        let good = Layout::new(oid(Layout::lo(1 << 22, true), 2), 1 << 22, true).to_bytes();
        let mut rule2 = good.clone();
        rule2[24] = 2;
        let err = Layout::from_bytes(&rule2).unwrap_err();
        assert!(err.contains("rule 2") && err.contains(OBJECT_ID_ATTR), "{err}");
        let err = Layout::from_bytes(&good[..20]).unwrap_err();
        assert!(err.contains("holds 20 bytes"), "{err}");
        // A spread record on the plain layout's object (or the other way): refused, not read
        // with the other naming.
        let mut wrong = Layout::new(oid(Layout::lo(1 << 22, false), 2), 1 << 22, false).to_bytes();
        wrong.extend_from_slice(&SPREAD_NAMES.to_le_bytes());
        assert!(Layout::from_bytes(&wrong).unwrap_err().contains("whose object is"));
        let mut odd = good.clone();
        odd[16..24].copy_from_slice(&3000u64.to_le_bytes());
        assert!(Layout::from_bytes(&odd).unwrap_err().contains("chunk size 3000"));
        // An unchunked record names `OBJECT_LO`, as every version wrote it: not the index beside
        // it, nor any other object of the container.
        for lo in [OBJECT_LO + 1, OBJECT_LO - 1, Layout::lo(1 << 22, true), 0, u64::MAX] {
            let err = Layout::from_bytes(&oid(lo, 2).to_bytes()).unwrap_err();
            assert!(err.contains("for one dkey per key, whose object is 0x6e69786c64616f73"), "{err}");
        }
    }
}

/// The layout record (`OBJECT_ID_ATTR`) as another writer to the container could have set it:
/// any bytes are refused with a message naming the attribute, or read as a layout whose keys'
/// object is the one this plugin gives that layout (`Layout::lo`), so that the keys' object and
/// the eviction index beside it (`lo` + 1, which eviction punches in) are never some other
/// object of the container; and what reads is exactly what `to_bytes` writes for it.
#[cfg(test)]
mod props {
    use proptest::prelude::*;

    use super::*;

    /// Records near the ones the plugin writes: its objects' `lo`s, chunk sizes of both kinds,
    /// the naming rule and lengths about the three valid ones.
    fn records() -> impl Strategy<Value = Vec<u8>> {
        let lo = prop_oneof![
            any::<u64>(),
            Just(OBJECT_LO),
            Just(OBJECT_LO + 1),
            Just(OBJECT_LO.wrapping_sub(1)),
            Just(u64::MAX),
            (16u32..=30, any::<bool>()).prop_map(|(s, spread)| Layout::lo(1 << s, spread)),
            (16u32..=30, any::<bool>()).prop_map(|(s, spread)| Layout::lo(1 << s, spread) - 1),
        ];
        let chunk = prop_oneof![any::<u64>(), (0u32..64).prop_map(|s| 1u64 << s), Just(0u64)];
        let rule = prop_oneof![Just(SPREAD_NAMES), any::<u64>()];
        (lo, any::<u64>(), chunk, rule, 0usize..=40).prop_map(|(lo, hi, chunk, rule, len)| {
            let mut b = ObjectId { lo, hi }.to_bytes().to_vec();
            b.extend_from_slice(&chunk.to_le_bytes());
            b.extend_from_slice(&rule.to_le_bytes());
            b.resize(len, 0xa5);
            b
        })
    }

    proptest! {
        #![proptest_config(crate::fuzz(4096))]

        #[test]
        fn any_layout_record_is_refused_or_names_the_plugins_own_object(b in records()) {
            match Layout::from_bytes(&b) {
                Ok(l) => {
                    prop_assert_eq!(l.to_bytes(), b);
                    prop_assert_eq!(l.oid.lo, Layout::lo(l.chunk, l.spread()), "{:?}", l);
                    prop_assert!(l.chunk == 0 || (l.chunk.is_power_of_two() && (MIN_CHUNK_BYTES..=MAX_CHUNK_BYTES).contains(&l.chunk)));
                    prop_assert_eq!(l.index_id().lo, l.oid.lo + 1);
                }
                Err(e) => prop_assert!(e.contains(OBJECT_ID_ATTR), "{}", e),
            }
        }

        #[test]
        fn layouts_round_trip(groups in 1u64..=0xffff, shift in 16u32..=30, chunked in any::<bool>(), spread in any::<bool>()) {
            let chunk = if chunked { 1u64 << shift } else { 0 };
            let id = ObjectId { lo: Layout::lo(chunk, spread && chunked), hi: (1 << 56) | (groups << 32) | 7 };
            let l = Layout::new(id, chunk, spread);
            prop_assert_eq!(Layout::from_bytes(&l.to_bytes()), Ok(l));
        }
    }
}
