//! The engine: one DAOS backend instance. Parsed config, the DAOS handles, the lanes, and the
//! request lifecycle (prep plans, post launches, check reads atomics, release frees).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::config::Config;
use crate::daos::io::IoKind;
use crate::daos::{Container, InitGuard, Library, Object, Pool};
use crate::error::{Error, Result, Status};
use crate::key::ObjectKey;
use crate::lanes::{self, Attempt, Lanes, Op};
use crate::planner::{self, Fold, Pair};

/// `lo` of the object holding every key of a container (the class bits go into `hi`).
/// Every engine on the same container uses it, so agents share their keys.
pub const OBJECT_LO: u64 = 0x6e69_786c_6461_6f73; // "nixldaos"

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

/// One OBJ registration: the key, copied.
#[derive(Debug)]
pub struct Registration {
    pub key: ObjectKey,
}

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
    folds: Vec<Fold>,
    current: Mutex<Option<Arc<Attempt>>>,
}

impl Request {
    pub fn folds(&self) -> &[Fold] {
        &self.folds
    }
}

pub struct Engine {
    pub cfg: Config,
    // Field order is teardown order: lanes stop before the object, container and pool close.
    lanes: Lanes,
    obj: Arc<Object>,
    _cont: Container,
    _pool: Pool,
    _init: InitGuard,
    lib: &'static Library,
}

impl Engine {
    pub fn create(cfg: Config) -> Result<Engine> {
        let lib = Library::load(&cfg.daos_lib)?;
        let init = lib.init()?;
        let pool = Pool::connect(lib, &cfg.pool, &cfg.system).map_err(|e| {
            Error::InvalidArg(format!(
                "cannot connect to DAOS pool {:?} of system {:?}: {e}. Check the label (`dmg pool list`) \
                 and that daos_agent runs on this host",
                cfg.pool, cfg.system
            ))
            .with_der(e.der())
        })?;
        let cont = Container::open(lib, &pool, &cfg.container, cfg.create_container).map_err(|e| {
            let hint = if e.der() == Some(-crate::daos::sys::DER_NONEXIST) {
                "; create it (`daos cont create <pool> <label>`) or pass create_container=true"
            } else {
                ""
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
        let obj = Arc::new(Object::open(lib, &cont, OBJECT_LO, oclass)?);
        let lanes = Lanes::start(lib, obj.clone(), cfg.num_queues, cfg.max_inflight, TEARDOWN_GRACE.min(Duration::from_millis(cfg.timeout_ms)))?;
        tracing::info!(
            pool = %cfg.pool, container = %cfg.container, lib = %lib.path, fold = cfg.fold,
            queues = cfg.num_queues, timeout_ms = cfg.timeout_ms, "DAOS backend ready"
        );
        Ok(Engine { cfg, lanes, obj, _cont: cont, _pool: pool, _init: init, lib })
    }

    pub fn register(&self, mem: MemType, dev_id: u64, meta: &[u8]) -> Result<Option<Box<Registration>>> {
        match mem {
            MemType::Dram => Ok(None),
            MemType::Obj => Ok(Some(Box::new(Registration { key: ObjectKey::from_registration(meta, dev_id) }))),
            MemType::Vram => Err(Error::NotSupported(
                "the DAOS backend does not register VRAM: register DRAM buffers (stage GPU memory through host memory)".into(),
            )),
            MemType::File | MemType::Blk => Err(Error::NotSupported(format!(
                "the DAOS backend moves data between DRAM and OBJ; {mem:?} memory is not supported (use DRAM buffers and OBJ keys)"
            ))),
        }
    }

    pub fn prep(&self, op: XferOp, local_mem: MemType, local: &[Desc], remote_mem: MemType, remote: &[Desc]) -> Result<Box<Request>> {
        if local_mem == MemType::Vram {
            return Err(Error::NotSupported("the DAOS backend cannot transfer VRAM: use DRAM buffers".into()));
        }
        if local_mem != MemType::Dram || remote_mem != MemType::Obj {
            return Err(Error::InvalidArg(format!(
                "the DAOS backend moves data between local DRAM and OBJ keys; got {local_mem:?} -> {remote_mem:?}"
            )));
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
        let folds = planner::plan(&pairs, self.cfg.fold)?;
        Ok(Box::new(Request { op, folds, current: Mutex::new(None) }))
    }

    pub fn post(&self, req: &Request) -> Result<Status> {
        let mut current = req.current.lock().unwrap();
        if let Some(a) = current.as_ref() {
            if a.remaining() > 0 && !a.reported.load(std::sync::atomic::Ordering::Acquire) {
                return Err(Error::RepostActive);
            }
        }
        let deadline = Instant::now() + Duration::from_millis(self.cfg.timeout_ms);
        let attempt = Arc::new(Attempt::new(req.folds.len(), deadline));
        *current = Some(attempt.clone());
        drop(current);
        if req.folds.is_empty() {
            return Ok(Status::Success);
        }
        let kind = match req.op {
            XferOp::Read => IoKind::Fetch,
            XferOp::Write => IoKind::Update,
        };
        for f in &req.folds {
            self.lanes.submit(Op::new(kind, &f.key, &f.extents, Some(attempt.clone())));
        }
        Ok(Status::InProgress)
    }

    /// Never blocks: reads the attempt's counters and its deadline.
    pub fn check(&self, req: &Request) -> Result<Status> {
        let attempt = match req.current.lock().unwrap().as_ref() {
            Some(a) => a.clone(),
            None => return Ok(Status::NotPosted),
        };
        let remaining = attempt.remaining();
        if remaining == 0 || attempt.failed() {
            if let Some(e) = attempt.take_error() {
                attempt.reported.store(true, std::sync::atomic::Ordering::Release);
                tracing::error!("DAOS transfer failed: {e}");
                return Err(e);
            }
            if attempt.failed() {
                return Ok(Status::Backend);
            }
            if remaining == 0 {
                return Ok(Status::Success);
            }
        }
        if Instant::now() >= attempt.deadline {
            if !attempt.reported.swap(true, std::sync::atomic::Ordering::AcqRel) {
                let e = Error::Timeout {
                    what: format!("{remaining} of {} DAOS RPC(s) of this request", req.folds.len()),
                    ms: self.cfg.timeout_ms,
                };
                tracing::error!("DAOS transfer failed: {e}; the engine keeps their buffers until DAOS completes them");
                return Err(e);
            }
            return Ok(Status::Backend);
        }
        Ok(Status::InProgress)
    }

    #[allow(clippy::boxed_local)] // takes back the ownership handed to NIXL
    pub fn release(&self, req: Box<Request>) {
        if let Some(a) = req.current.lock().unwrap().as_ref() {
            let n = a.remaining();
            if n > 0 {
                tracing::debug!("request released with {n} DAOS RPC(s) in flight; DAOS cannot abort them, they finish on their own");
            }
        }
    }

    /// Size of each key, None where it does not exist. All queries run concurrently.
    pub fn query_sizes(&self, keys: &[ObjectKey]) -> Result<Vec<Option<u64>>> {
        let deadline = Instant::now() + Duration::from_millis(self.cfg.timeout_ms);
        lanes::query_sizes(self.lib, &self.obj, keys, self.cfg.max_inflight, deadline).map_err(|e| match e {
            Error::Timeout { what, .. } => Error::Timeout { what, ms: self.cfg.timeout_ms },
            e => e,
        })
    }

    /// Operations launched into DAOS and not yet completed.
    pub fn inflight(&self) -> usize {
        self.lanes.inflight()
    }

    pub fn library(&self) -> &'static Library {
        self.lib
    }

    pub fn object(&self) -> &Object {
        &self.obj
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.lanes.shutdown();
        tracing::debug!(pool = %self.cfg.pool, container = %self.cfg.container, "DAOS backend closed");
    }
}
