// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//! Safe wrappers over libdaos: a loaded `Library`, and RAII handles `Pool`, `Container`,
//! `Object`, `EventQueue`. Every call into libdaos is made here, in `io` and through `sys`'s
//! table. The unsafe fns here (`Object::launch` and the event calls) hand the rest of the
//! contract to their two callers, `crate::lanes` (transfers) and `query` (size queries), whose
//! unsafe blocks hold the launched operations' raw pointers between launch and reap and free
//! them; each block says why.
//!
//! Asynchronous I/O is launched through `Object::launch`, whose contract (like io_uring's
//! push) is: everything the operation points at (keys, iods, recxs, sgls, iovs, the event
//! itself, and the user's buffers) stays alive and unmoved until the event is reaped from its
//! queue. `crate::lanes` upholds it by keeping each operation in a `Box` owned by DAOS between
//! launch and reap.

pub mod acl;
pub mod client_env;
pub mod io;
pub mod kv;
pub mod query;
pub mod sys;

use std::collections::HashMap;
use std::ffi::{CStr, CString};
use std::sync::OnceLock;

use parking_lot::Mutex;
use std::time::{Duration, Instant};

use crate::error::Error;

pub use sys::{d_iov_t, d_sg_list_t, daos_event_t, daos_handle_t, daos_iod_t, daos_recx_t};

/// Whether a DAOS return code says "does not exist" (`DER_NONEXIST`): the one place outside
/// `sys` that knows the number, so the layers above ask rather than compare codes.
pub fn rc_is_nonexistent(rc: i32) -> bool {
    rc == -sys::DER_NONEXIST
}

/// Whether a DAOS return code says an engine may be gone or the pool map may have changed
/// (time-outs, unreachable or excluded ranks, a stale map): worth refreshing the pool map.
pub fn rc_is_trouble(rc: i32) -> bool {
    [sys::DER_TIMEDOUT, sys::DER_UNREACH, sys::DER_EXCLUDED, sys::DER_STALE, sys::DER_HG].contains(&-rc)
}

/// Whether a DAOS return code says the pool is out of space (`DER_NOSPACE`).
pub fn rc_is_nospace(rc: i32) -> bool {
    rc == -sys::DER_NOSPACE
}

impl Error {
    /// A DAOS error saying the pool, container, attribute or key does not exist.
    pub fn is_nonexistent(&self) -> bool {
        self.der().is_some_and(rc_is_nonexistent)
    }

    /// A DAOS error saying the thing to create exists already (`DER_EXIST`).
    pub fn is_existing(&self) -> bool {
        self.der() == Some(-sys::DER_EXIST)
    }

    /// A transaction's commit that must be retried (`DER_TX_RESTART`: a conflict).
    pub fn is_tx_restart(&self) -> bool {
        self.der() == Some(-sys::DER_TX_RESTART)
    }

    /// A DAOS error refusing the caller's rights (`DER_NO_PERM`): an ACL that does not name it.
    pub fn is_no_perm(&self) -> bool {
        self.der() == Some(-sys::DER_NO_PERM)
    }

    /// A DAOS error saying the pool is full (`DER_NOSPACE`).
    pub fn is_nospace(&self) -> bool {
        self.der().is_some_and(rc_is_nospace)
    }
}

/// A loaded libdaos. Loaded once per path for the life of the process: operations left in
/// flight by a torn-down engine may still be completed by the library, so it is never unloaded.
pub struct Library {
    pub(crate) api: sys::DaosApi,
    pub path: String,
}

/// The DAOS client API releases whose structure layouts and calls this plugin uses (its
/// committed declarations are DAOS 2.8.0's, `bindings.rs`).
const SUPPORTED_DAOS: (i32, i32) = (2, 8);

/// Set to 1, uses a libdaos of another client API release (with a warning).
pub const ALLOW_DAOS_ENV: &str = "NIXL_DAOS_ALLOW_UNTESTED_DAOS";

/// The client API version libdaos at `path` reports (`daos_version_get`, exported by libdaos
/// though not declared in DAOS 2.8's public headers); None when it has none.
fn client_api_version(path: &str) -> Option<(i32, i32, i32)> {
    type VersionGet = unsafe extern "C" fn(*mut i32, *mut i32, *mut i32) -> i32;
    // SAFETY: the library is loaded already (DaosApi holds it): this only raises its count.
    let lib = unsafe { libloading::Library::new(path) }.ok()?;
    // SAFETY: DAOS defines it as int daos_version_get(int *major, int *minor, int *fix).
    let get = unsafe { lib.get::<VersionGet>(b"daos_version_get\0") }.ok()?;
    let (mut major, mut minor, mut fix) = (0, 0, 0);
    // SAFETY: three valid out pointers; a plain getter that needs no daos_init.
    (unsafe { get(&mut major, &mut minor, &mut fix) } == 0).then_some((major, minor, fix))
}

/// Refuses a libdaos of another client API release than `SUPPORTED_DAOS`, unless
/// `ALLOW_DAOS_ENV` says to go on.
fn check_version(path: &str, version: Option<(i32, i32, i32)>) -> Result<(), Error> {
    let (want_major, want_minor) = SUPPORTED_DAOS;
    // DAOS 2.6.1 to 2.6.5 report client API 2.7.0; 2.6.0 and every older release have no
    // daos_version_get.
    let found = match version {
        Some((major, minor, _)) if (major, minor) == SUPPORTED_DAOS => return Ok(()),
        Some((2, 7, fix)) => format!("DAOS client API 2.7.{fix} (as DAOS 2.6.1 to 2.6.5 report)"),
        Some((major, minor, fix)) => format!("DAOS client API {major}.{minor}.{fix}"),
        None => "a library without daos_version_get (DAOS 2.6.0 or older, or not libdaos)".to_string(),
    };
    if std::env::var(ALLOW_DAOS_ENV).as_deref() == Ok("1") {
        // The one behaviour of DAOS 2.6 known to matter here (its headers declare every call
        // and structure this plugin uses as 2.8 does): an asynchronous container create frees
        // its property list early, and a retried create task reads it after it was freed.
        const CREATE: &str = "create its containers with `daos cont create` rather than create_container=true \
                              (DAOS 2.6's asynchronous container create can read freed memory when it is retried)";
        let caveat = match version {
            Some((2, 7, _)) => format!("; {CREATE}"),
            None => format!("; if it is DAOS 2.6.0 or older, {CREATE}"),
            Some(_) => String::new(),
        };
        tracing::warn!(
            "DAOS backend: {path} is {found}, not the DAOS {want_major}.{want_minor} this plugin is built for; used \
             anyway because {ALLOW_DAOS_ENV}=1{caveat}"
        );
        return Ok(());
    }
    Err(Error::InvalidArg(format!(
        "{path} is {found}; this plugin is built for and tested with the DAOS {want_major}.{want_minor} client (its \
         structure layouts and calls), so it does not use it. Install the DAOS {want_major}.{want_minor} client \
         (libdaos.so.2), point daos_lib or NIXL_DAOS_LIBDAOS at it, or set {ALLOW_DAOS_ENV}=1 to use this one anyway"
    )))
}

impl Library {
    pub fn load(path: &str) -> Result<&'static Library, Error> {
        static LOADED: OnceLock<Mutex<HashMap<String, &'static Library>>> = OnceLock::new();
        let mut map = LOADED.get_or_init(Default::default).lock();
        if let Some(lib) = map.get(path) {
            return Ok(lib);
        }
        client_env::prepare();
        // SAFETY: loading a shared library runs its initialisers; libdaos (or daos-sim) is
        // the library the user named for exactly this purpose.
        let api =
            unsafe { sys::DaosApi::new(path) }.map_err(|source| Error::Load { path: path.to_string(), source })?;
        check_version(path, client_api_version(path))?;
        let lib: &'static Library = Box::leak(Box::new(Library { api, path: path.to_string() }));
        map.insert(path.to_string(), lib);
        Ok(lib)
    }

    /// "DER_NONEXIST"-style name of a negative DER code.
    pub fn errstr(&self, rc: i32) -> String {
        // SAFETY: d_errstr returns a static NUL-terminated string for any code.
        unsafe {
            let p = self.api.d_errstr(rc);
            if p.is_null() {
                format!("DER({rc})")
            } else {
                CStr::from_ptr(p).to_string_lossy().into_owned()
            }
        }
    }

    pub(crate) fn check(&self, call: &'static str, rc: i32) -> Result<(), Error> {
        if rc == 0 {
            Ok(())
        } else {
            Err(Error::Daos { call, rc, name: self.errstr(rc) })
        }
    }

    /// `daos_init`, refcounted by DAOS; paired with `daos_fini` when the guard drops.
    pub fn init(&'static self) -> Result<InitGuard, Error> {
        // SAFETY: plain call.
        self.check("daos_init", unsafe { self.api.daos_init() })?;
        Ok(InitGuard { lib: self })
    }

    /// Readies `ev` for one launch outside any event queue; it is reaped with `event_test`.
    ///
    /// # Safety
    /// `ev` must stay valid and unmoved until it is reaped or finalised.
    pub unsafe fn init_event_unqueued(&self, ev: *mut daos_event_t) -> Result<(), Error> {
        // SAFETY: `ev` stays valid until reaped or finalised (this function's contract); no queue.
        let rc = unsafe { self.api.daos_event_init(ev, daos_handle_t::default(), std::ptr::null_mut()) };
        self.check("daos_event_init", rc)
    }

    /// Progresses DAOS until `ev` completes or `timeout_us` passes; true once it is reaped.
    ///
    /// # Safety
    /// `ev` was initialised with `init_event_unqueued` and launched.
    pub unsafe fn event_test(&self, ev: *mut daos_event_t, timeout_us: i64) -> Result<bool, Error> {
        let mut done = false;
        // SAFETY: `ev` is an initialised, launched event (this function's contract).
        let rc = unsafe { self.api.daos_event_test(ev, timeout_us, &mut done) };
        self.check("daos_event_test", rc)?;
        Ok(done)
    }

    /// # Safety
    /// `ev` was initialised and is not running.
    pub unsafe fn fini_event(&self, ev: *mut daos_event_t) {
        // SAFETY: `ev` is initialised and not running (this function's contract).
        let rc = unsafe { self.api.daos_event_fini(ev) };
        if rc != 0 {
            tracing::debug!("daos_event_fini: {}", self.errstr(rc));
        }
    }

    /// Class id for a name such as "SX" or "RP_3GX"; None when DAOS does not know it.
    pub fn oclass_id(&self, name: &str) -> Option<u32> {
        let c = CString::new(name).ok()?;
        // SAFETY: c is a valid NUL-terminated string.
        let id = unsafe { self.api.daos_oclass_name2id(c.as_ptr()) };
        (id > 0).then_some(id as u32)
    }
}

pub struct InitGuard {
    lib: &'static Library,
}

/// Calls `bounded` gave up on (DAOS still holds them). While any exists, the last `daos_fini`
/// is skipped: tearing CaRT down waits for the RPCs still in flight, which against a dead
/// engine is CaRT's timeout (measured: a refused `create_backend` took 5 s longer), and the
/// leaked calls' memory stays DAOS's anyway.
static LEFT_IN_DAOS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

impl Drop for InitGuard {
    fn drop(&mut self) {
        if LEFT_IN_DAOS.load(std::sync::atomic::Ordering::Acquire) > 0 {
            tracing::debug!("daos_fini skipped: DAOS still holds calls this process gave up on");
            return;
        }
        // SAFETY: paired with the daos_init of this guard.
        unsafe { self.lib.api.daos_fini() };
    }
}

fn cstring(what: &str, s: &str) -> Result<CString, Error> {
    CString::new(s).map_err(|_| Error::InvalidArg(format!("{what} {s:?} contains a NUL byte")))
}

/// How long the control-plane calls of one `create_backend` may take, all together.
#[derive(Clone, Copy, Debug)]
pub struct Bound {
    pub deadline: Instant,
    pub ms: u64,
}

impl Bound {
    pub fn from_now(ms: u64) -> Bound {
        Bound { deadline: Instant::now() + Duration::from_millis(ms), ms }
    }
}

/// One blocking DAOS call run on an event of its own and waited for until `bound`: against a
/// dead engine DAOS keeps retrying (a pool connect took 15 s to fail on a killed engine), and
/// `create_backend` must not block its caller that long. `state` holds everything DAOS may still
/// read or write (names, out handles); `launch` starts the call on the event with it. Past the
/// deadline the event and `state` are leaked on purpose, since DAOS may complete the call later
/// and write into them. Returns `state` with the call's outputs once it succeeded.
pub(crate) fn bounded<S>(
    lib: &'static Library,
    what: &'static str,
    bound: Bound,
    state: S,
    launch: impl FnOnce(&mut S, *mut daos_event_t) -> i32,
) -> Result<S, Error> {
    struct Pending<S> {
        ev: daos_event_t,
        state: S,
    }
    // Counts this thread as inside libdaos for the exit (crate::host::on_exit_status): past the
    // deadline it returns, but until then a process exit must not unload libdaos's transport.
    let _inside = crate::host::InLibdaos::enter();
    let mut p = Box::new(Pending { ev: daos_event_t::default(), state });
    let ev: *mut daos_event_t = &mut p.ev;
    // SAFETY: the event lives in the box, which stays where it is until reaped or leaked.
    unsafe { lib.init_event_unqueued(ev)? };
    let rc = launch(&mut p.state, ev);
    if rc != 0 {
        // SAFETY: the call was not launched, so the event is idle.
        unsafe { lib.fini_event(ev) };
        return lib.check(what, rc).map(|_| unreachable!());
    }
    loop {
        let left = bound.deadline.saturating_duration_since(Instant::now());
        // SAFETY: launched above on an unqueued event; reaped at most once (we return when done).
        let done = unsafe { lib.event_test(ev, left.min(Duration::from_millis(10)).as_micros() as i64) };
        match done {
            Ok(true) => break,
            // The host is exiting: stop driving DAOS now (host.rs); the state is left to DAOS.
            Ok(false) if crate::host::exiting() => {
                std::mem::forget(p);
                LEFT_IN_DAOS.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
                return Err(Error::ShuttingDown);
            }
            Ok(false) if !left.is_zero() => continue,
            Ok(false) | Err(_) => {
                // Still inside DAOS: it may write into the event and state later.
                std::mem::forget(p);
                LEFT_IN_DAOS.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
                return Err(Error::Timeout { what: what.to_string(), ms: bound.ms });
            }
        }
    }
    let rc = p.ev.ev_error;
    // SAFETY: reaped, so no longer running.
    unsafe { lib.fini_event(ev) };
    lib.check(what, rc)?;
    Ok(p.state)
}

pub struct Pool {
    lib: &'static Library,
    pub(crate) poh: daos_handle_t,
    pub label: String,
    /// Connected read-write. False when the pool's ACL lets this user read only (`connect`):
    /// its containers then open read-only too.
    pub writable: bool,
    /// Set when a call on the pool timed out while the engine was being created: the handle is
    /// then left open on drop, since closing it would wait on the same unhealthy servers.
    abandoned: std::sync::atomic::AtomicBool,
}

impl Pool {
    /// Connects within `bound`. The connect runs on a thread of its own: before anything goes
    /// on an event, libdaos resolves the pool label with a synchronous RPC (`MGMT_POOL_FIND`),
    /// which against a dead engine blocks its caller for CaRT's timeout (15 s measured). Past
    /// the deadline the caller gets `Timeout` and the thread finishes on its own, holding its
    /// own `daos_init` reference so libdaos stays initialised under it.
    ///
    /// `daos_init` runs on that thread too, and its reference comes back with the pool: the
    /// first `daos_init` of a process asks the servers for the system's layout, and with an
    /// engine just killed it blocked for CaRT's timeout (5 s measured) before the connect began.
    pub fn connect(lib: &'static Library, label: &str, system: &str, bound: Bound) -> Result<(Pool, InitGuard), Error> {
        let (l, s) = (cstring("pool", label)?, cstring("system", system)?);
        let label = label.to_string();
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        std::thread::Builder::new()
            .name("nixl-daos-connect".into())
            .spawn(move || {
                // First, so dropped last: counts this thread until its last libdaos call (the
                // disconnect of a late pool, below) has returned.
                let _inside = crate::host::InLibdaos::enter();
                let t0 = Instant::now();
                let init = match lib.init() {
                    Ok(g) => {
                        // Slow only in a process's first call: its protocol queries ask random
                        // ranks of daos_agent's list, which may still hold a dead engine.
                        tracing::debug!("create_backend: daos_init after {:?}", t0.elapsed());
                        g
                    }
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        return;
                    }
                };
                let mut poh = daos_handle_t::default();
                let connect = |flags: u32, poh: &mut daos_handle_t| {
                    // SAFETY: valid strings and out pointer, all owned by this thread; synchronous.
                    let rc = unsafe {
                        lib.api.daos_pool_connect2(
                            l.as_ptr(),
                            s.as_ptr(),
                            flags,
                            poh,
                            std::ptr::null_mut(),
                            std::ptr::null_mut(),
                        )
                    };
                    lib.check("daos_pool_connect2", rc)
                };
                // A user the pool's ACL lets read only is refused a read-write connect: it
                // gets a read-only one, whose keys it may read (`Container::open`).
                let writable = match connect(sys::DAOS_PC_RW, &mut poh) {
                    Err(e) if e.is_no_perm() => match connect(sys::DAOS_PC_RO, &mut poh) {
                        Ok(()) => Ok(false),
                        Err(ro) if ro.is_no_perm() => Err(e),
                        Err(ro) => Err(ro),
                    },
                    other => other.map(|()| true),
                };
                let result =
                    writable.map(|writable| (Pool { lib, poh, label, writable, abandoned: Default::default() }, init));
                // Nobody waits any more: a late pool is dropped (disconnected) here, and the
                // reference with it (daos_fini is skipped while calls were given up on).
                let _ = tx.send(result);
            })
            .map_err(|source| Error::Spawn { what: "a thread to connect to the pool", source })?;
        match rx.recv_timeout(bound.deadline.saturating_duration_since(Instant::now())) {
            Ok(result) => result,
            Err(_) => {
                LEFT_IN_DAOS.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
                Err(Error::Timeout { what: "daos_init and daos_pool_connect2".into(), ms: bound.ms })
            }
        }
    }
}

/// What `daos_pool_query` says of the pool's targets (`Pool::health`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolHealth {
    /// Every target of the pool map, whatever its state (does not drop when an engine dies).
    pub targets: u32,
    /// Engines (ranks) of the pool map.
    pub engines: u32,
    /// Targets DAOS has excluded: 0 until it has excluded a dead engine (tens of seconds after
    /// the death), and again once the engine is reintegrated.
    pub disabled: u32,
    pub map_version: u32,
}

impl PoolHealth {
    pub fn degraded(&self) -> bool {
        self.disabled > 0
    }
}

/// How long a handle's close may wait for a server: closing talks to the pool service, which
/// against a dead engine blocks for CaRT's timeout.
const CLOSE_BOUND_MS: u64 = 2_000;

impl Pool {
    /// `daos_pool_query` without space (`pi_bits` 0): one RPC to the pool service leader. It
    /// also installs the newest pool map in this process's libdaos, so later I/O stops going to
    /// targets DAOS has excluded (a space query would ask every engine, and wait on a dead one).
    pub fn health(&self, bound: Bound) -> Result<PoolHealth, Error> {
        let (lib, poh) = (self.lib, self.poh);
        let info = Box::new(sys::daos_pool_info_t { pi_bits: 0, ..Default::default() });
        let i = bounded(lib, "daos_pool_query", bound, info, |i, ev| {
            // SAFETY: the info lives in bounded's state (a box); no ranks, no properties.
            unsafe { lib.api.daos_pool_query(poh, std::ptr::null_mut(), &mut **i, std::ptr::null_mut(), ev) }
        })?;
        Ok(PoolHealth {
            targets: i.pi_ntargets,
            engines: i.pi_nnodes,
            disabled: i.pi_ndisabled,
            map_version: i.pi_map_ver,
        })
    }
}

impl Pool {
    /// Leaves the handle open when dropped (see `abandoned`).
    pub fn abandon(&self) {
        self.abandoned.store(true, std::sync::atomic::Ordering::Release);
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        if self.abandoned.load(std::sync::atomic::Ordering::Acquire) {
            tracing::debug!(pool = %self.label, "pool handle left open: its servers did not answer in time");
            return;
        }
        if crate::host::exiting() {
            // Nothing drives DAOS once the process exits (crate::host): the disconnect could
            // not complete, and the servers drop a dead process's handles themselves.
            tracing::debug!(pool = %self.label, "pool handle left open: the process is exiting");
            return;
        }
        let (lib, poh) = (self.lib, self.poh);
        // Bounded: a failed create_backend drops its pool while an engine may be dead.
        let r = bounded(lib, "daos_pool_disconnect", Bound::from_now(CLOSE_BOUND_MS), (), |_, ev| {
            // SAFETY: handle from a successful connect; containers were closed first (field order).
            unsafe { lib.api.daos_pool_disconnect(poh, ev) }
        });
        if let Err(e) = r {
            tracing::warn!(pool = %self.label, "{e}");
        }
    }
}

pub struct Container {
    lib: &'static Library,
    pub(crate) coh: daos_handle_t,
    pub label: String,
    /// Opened read-write. False when its ACL (or the pool's) lets this user read only: its
    /// keys are read, nothing is written, punched or recorded.
    pub writable: bool,
    /// Bound of the attribute calls made while the engine is created.
    bound: Bound,
    /// As `Pool::abandoned`.
    abandoned: std::sync::atomic::AtomicBool,
}

impl Container {
    /// Opens `label`; when it does not exist and `create` is set, creates it first, with the
    /// ACL `acl` (entries such as `A::OWNER@:rwdtTaAo`, `acl::creation_acl`).
    pub fn open(
        lib: &'static Library,
        pool: &Pool,
        label: &str,
        create: bool,
        acl: &[String],
        bound: Bound,
    ) -> Result<Container, Error> {
        let poh = pool.poh;
        let open_as = |flags: u32| {
            bounded(
                lib,
                "daos_cont_open2",
                bound,
                (cstring("container", label)?, daos_handle_t::default()),
                |(l, coh), ev| {
                    // SAFETY: valid pool handle; label and out handle live in bounded's state.
                    unsafe { lib.api.daos_cont_open2(poh, l.as_ptr(), flags, coh, std::ptr::null_mut(), ev) }
                },
            )
        };
        // Read-write where the ACLs allow it; a user they let read only gets a read-only handle
        // (DAOS refuses its updates and punches), and the first refusal is the one reported.
        let open = || {
            if !pool.writable {
                return open_as(sys::DAOS_COO_RO).map(|(_, coh)| (coh, false));
            }
            match open_as(sys::DAOS_COO_RW) {
                // Refused read-only too: the first refusal is the one to report; any other
                // failure (a timeout) is its own.
                Err(e) if e.is_no_perm() => {
                    open_as(sys::DAOS_COO_RO)
                        .map(|(_, coh)| (coh, false))
                        .map_err(|ro| if ro.is_no_perm() { e } else { ro })
                }
                other => other.map(|(_, coh)| (coh, true)),
            }
        };
        let (coh, writable) = match open() {
            Err(e) if create && e.is_nonexistent() => {
                tracing::info!(container = label, pool = %pool.label, acl = %acl.join(","), "creating container");
                let state = (cstring("container", label)?, AclProp::new(lib, acl)?);
                let created = bounded(lib, "daos_cont_create_with_label", bound, state, |(l, prop), ev| {
                    // SAFETY: valid handle; the label and the properties live in bounded's state
                    // (leaked with it if DAOS keeps the call); a NULL uuid out is allowed.
                    unsafe { lib.api.daos_cont_create_with_label(poh, l.as_ptr(), prop.prop, std::ptr::null_mut(), ev) }
                });
                // Another agent may have created it at the same moment: EXIST is fine.
                match created {
                    Err(e) if !e.is_existing() => return Err(e),
                    _ => {}
                }
                open()?
            }
            other => other?,
        };
        Ok(Container { lib, coh, label: label.to_string(), writable, bound, abandoned: Default::default() })
    }
}

/// Container properties holding one ACL (`DAOS_PROP_CO_ACL`), allocated by libdaos and freed
/// with `daos_prop_free` (which frees the ACL too).
struct AclProp {
    lib: &'static Library,
    prop: *mut sys::daos_prop_t,
}

impl AclProp {
    fn new(lib: &'static Library, aces: &[String]) -> Result<AclProp, Error> {
        let strs = aces.iter().map(|a| cstring("ACL entry", a)).collect::<Result<Vec<_>, _>>()?;
        let ptrs: Vec<*const std::ffi::c_char> = strs.iter().map(|s| s.as_ptr()).collect();
        // SAFETY: plain call; NULL when out of memory.
        let prop = unsafe { lib.api.daos_prop_alloc(1) };
        if prop.is_null() {
            return Err(Error::Daos {
                call: "daos_prop_alloc",
                rc: -sys::DER_NOMEM,
                name: lib.errstr(-sys::DER_NOMEM),
            });
        }
        let p = AclProp { lib, prop };
        // SAFETY: daos_prop_alloc(1) gave one zeroed entry; the ACL it is given is freed with the
        // properties (daos_prop_free), also when daos_acl_from_strs fails and leaves it NULL.
        let rc = unsafe {
            let e = &mut *(*prop).dpp_entries;
            e.dpe_type = sys::DAOS_PROP_CO_ACL;
            let acl = std::ptr::addr_of_mut!(e.__bindgen_anon_1.dpe_val_ptr).cast::<*mut sys::daos_acl>();
            lib.api.daos_acl_from_strs(ptrs.as_ptr().cast_mut(), ptrs.len(), acl)
        };
        lib.check("daos_acl_from_strs", rc).map_err(|e| {
            Error::InvalidArg(format!("DAOS refuses the container ACL {:?}: {e}", aces.join(","))).with_der(e.der())
        })?;
        Ok(p)
    }
}

impl Drop for AclProp {
    fn drop(&mut self) {
        // SAFETY: from daos_prop_alloc, freed once; DAOS no longer reads it (bounded leaks its
        // state, and so this, while a call may still run).
        unsafe { self.lib.api.daos_prop_free(self.prop) }
    }
}

impl Container {
    /// The value of a user attribute, None when it does not exist.
    pub fn get_attr(&self, name: &str) -> Result<Option<Vec<u8>>, Error> {
        let (lib, coh) = (self.lib, self.coh);
        let n = cstring("attribute", name)?;
        let names = [n.as_ptr()];
        // The name's bytes live on the heap, so moving `n` into the state keeps `names` valid.
        let sized = bounded(lib, "daos_cont_get_attr", self.bound, (n, names, 0usize), |(_, names, size), ev| {
            // SAFETY: one name; NULL buffers ask for the size only; all in bounded's state.
            unsafe { lib.api.daos_cont_get_attr(coh, 1, names.as_ptr(), std::ptr::null(), size, ev) }
        });
        let (n, names, size) = match sized {
            Err(e) if e.is_nonexistent() => return Ok(None),
            other => other?,
        };
        let mut value = vec![0u8; size];
        let bufs = [value.as_mut_ptr().cast::<std::ffi::c_void>()];
        let (_, _, value, _, size) = bounded(
            lib,
            "daos_cont_get_attr",
            self.bound,
            (n, names, value, bufs, size),
            |(_, names, _, bufs, size), ev| {
                // SAFETY: one buffer of `size` bytes (the Vec's heap block, which moving the Vec
                // does not move); all in bounded's state.
                unsafe { lib.api.daos_cont_get_attr(coh, 1, names.as_ptr(), bufs.as_ptr(), size, ev) }
            },
        )?;
        let mut value = value;
        value.truncate(size);
        Ok(Some(value))
    }

    pub fn set_attr(&self, name: &str, value: &[u8]) -> Result<(), Error> {
        let (lib, coh) = (self.lib, self.coh);
        let n = cstring("attribute", name)?;
        let names = [n.as_ptr()];
        let value = value.to_vec();
        let values = [value.as_ptr().cast::<std::ffi::c_void>()];
        let sizes = [value.len()];
        bounded(
            lib,
            "daos_cont_set_attr",
            self.bound,
            (n, names, value, values, sizes),
            |(_, names, _, values, sizes), ev| {
                // SAFETY: one name, value and size, all owned by bounded's state (heap blocks do
                // not move with it).
                unsafe { lib.api.daos_cont_set_attr(coh, 1, names.as_ptr(), values.as_ptr(), sizes.as_ptr(), ev) }
            },
        )
        .map(|_| ())
    }
}

impl Container {
    /// Leaves the handle open when dropped (see `Pool::abandoned`).
    pub fn abandon(&self) {
        self.abandoned.store(true, std::sync::atomic::Ordering::Release);
    }
}

impl Drop for Container {
    fn drop(&mut self) {
        if self.abandoned.load(std::sync::atomic::Ordering::Acquire) {
            tracing::debug!(container = %self.label, "container handle left open: its servers did not answer in time");
            return;
        }
        if crate::host::exiting() {
            tracing::debug!(container = %self.label, "container handle left open: the process is exiting");
            return;
        }
        let (lib, coh) = (self.lib, self.coh);
        let r = bounded(lib, "daos_cont_close", Bound::from_now(CLOSE_BOUND_MS), (), |_, ev| {
            // SAFETY: handle from a successful open; objects were closed first.
            unsafe { lib.api.daos_cont_close(coh, ev) }
        });
        if let Err(e) = r {
            tracing::warn!(container = %self.label, "{e}");
        }
    }
}

/// The DAOS object that holds the engine's keys (one dkey per NIXL key).
pub struct Object {
    lib: &'static Library,
    pub(crate) oh: daos_handle_t,
}

impl Object {
    /// The id DAOS gives object `lo` of class `oclass` (0: chosen from the container's
    /// redundancy factor and the pool's size). Local: no RPC.
    ///
    /// With `oclass` 0 it asks for the pool-wide sharding hint (`DAOS_OCH_SHD_MAX`): without a
    /// hint DAOS gives a `MULTI_HASHED` object one redundancy group, so every key of the
    /// container would land on the same target(s). DAOS ignores hints for an explicit class.
    ///
    /// `spread` false asks for one group (`DAOS_OCH_SHD_TINY`): the only way to learn the class
    /// DAOS picks on a pool with an excluded engine, where asking for the maximum can abort the
    /// process inside libdaos 2.8 (`reserve_grp_by_rf` asserts when fewer targets are up than
    /// there are fault domains).
    pub fn generate_id(
        lib: &'static Library,
        cont: &Container,
        lo: u64,
        oclass: u32,
        spread: bool,
    ) -> Result<ObjectId, Error> {
        let mut oid = sys::daos_obj_id_t { lo, hi: 0 };
        let hint = if spread { sys::DAOS_OCH_SHD_MAX } else { sys::DAOS_OCH_SHD_TINY };
        // SAFETY: valid container handle and out pointer.
        let rc = unsafe {
            lib.api.daos_obj_generate_oid2(cont.coh, &mut oid, sys::DAOS_OT_MULTI_HASHED as _, oclass, hint, 0)
        };
        lib.check("daos_obj_generate_oid", rc)?;
        Ok(ObjectId { lo: oid.lo, hi: oid.hi })
    }

    pub fn open(lib: &'static Library, cont: &Container, id: ObjectId) -> Result<Object, Error> {
        let mut oh = daos_handle_t::default();
        let oid = sys::daos_obj_id_t { lo: id.lo, hi: id.hi };
        // A read-only container handle opens its objects read-only.
        let mode = if cont.writable { sys::DAOS_OO_RW } else { sys::DAOS_OO_RO };
        // SAFETY: valid container handle and out pointer; synchronous (local) call.
        let rc = unsafe { lib.api.daos_obj_open(cont.coh, oid, mode, &mut oh, std::ptr::null_mut()) };
        lib.check("daos_obj_open", rc)?;
        Ok(Object { lib, oh })
    }
}

/// A DAOS object id (`daos_obj_id_t`), stored as 16 little-endian bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ObjectId {
    pub lo: u64,
    pub hi: u64,
}

impl ObjectId {
    pub fn to_bytes(self) -> [u8; 16] {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&self.lo.to_le_bytes());
        b[8..].copy_from_slice(&self.hi.to_le_bytes());
        b
    }

    /// Number of redundancy groups the id encodes (DAOS's `daos_obj_id2grp_nr`: bits 32-47 of
    /// `hi`). DAOS hashes each dkey to one group, so this is how many target groups the keys
    /// are spread over.
    pub fn groups(self) -> u32 {
        ((self.hi >> 32) & 0xFFFF) as u32
    }

    pub fn from_bytes(b: &[u8]) -> Option<ObjectId> {
        let b: &[u8; 16] = b.try_into().ok()?;
        Some(ObjectId {
            lo: u64::from_le_bytes(b[..8].try_into().unwrap()),
            hi: u64::from_le_bytes(b[8..].try_into().unwrap()),
        })
    }
}

impl Drop for Object {
    fn drop(&mut self) {
        // SAFETY: handle from a successful open.
        let rc = unsafe { self.lib.api.daos_obj_close(self.oh, std::ptr::null_mut()) };
        if rc != 0 {
            tracing::warn!("daos_obj_close: {}", self.lib.errstr(rc));
        }
    }
}

/// One DAOS event queue, polled by one lane thread.
pub struct EventQueue {
    lib: &'static Library,
    eqh: daos_handle_t,
    destroyed: std::sync::atomic::AtomicBool,
}

impl EventQueue {
    pub fn create(lib: &'static Library) -> Result<EventQueue, Error> {
        let mut eqh = daos_handle_t::default();
        // SAFETY: valid out pointer.
        lib.check("daos_eq_create", unsafe { lib.api.daos_eq_create(&mut eqh) })?;
        Ok(EventQueue { lib, eqh, destroyed: Default::default() })
    }

    /// Reaps up to `out.len()` completed events, waiting at most `timeout_us` (µs).
    pub fn poll(&self, timeout_us: i64, out: &mut [*mut daos_event_t]) -> Result<usize, Error> {
        // SAFETY: out has room for out.len() pointers.
        let n = unsafe { self.lib.api.daos_eq_poll(self.eqh, 0, timeout_us, out.len() as u32, out.as_mut_ptr()) };
        if n < 0 {
            self.lib.check("daos_eq_poll", n)?;
        }
        Ok(n.max(0) as usize)
    }

    /// Readies `ev` for one launch on this queue.
    ///
    /// # Safety
    /// `ev` must stay valid and unmoved until it is reaped or finalised.
    pub unsafe fn init_event(&self, ev: *mut daos_event_t) -> Result<(), Error> {
        // SAFETY: `ev` stays valid until reaped or finalised (this function's contract).
        let rc = unsafe { self.lib.api.daos_event_init(ev, self.eqh, std::ptr::null_mut()) };
        self.lib.check("daos_event_init", rc)
    }

    /// # Safety
    /// `ev` was initialised with `init_event` and is not running.
    pub unsafe fn fini_event(&self, ev: *mut daos_event_t) {
        // SAFETY: the same contract as this function's.
        unsafe { self.lib.fini_event(ev) }
    }

    /// Destroys the queue once it has nothing in flight.
    pub fn destroy(&self) {
        if self.destroyed.swap(true, std::sync::atomic::Ordering::AcqRel) {
            return;
        }
        // SAFETY: handle from a successful create, destroyed once.
        let rc = unsafe { self.lib.api.daos_eq_destroy(self.eqh, 0) };
        if rc != 0 {
            tracing::warn!("daos_eq_destroy: {}", self.lib.errstr(rc));
        }
    }

    /// Gives the queue up without destroying it: events are still inside DAOS, and a forced
    /// destroy would wait for their RPCs (CaRT flushes the context first), unbounded when the
    /// server is gone.
    pub fn leak(&self) {
        self.destroyed.store(true, std::sync::atomic::Ordering::Release);
    }
}

impl Drop for EventQueue {
    fn drop(&mut self) {
        self.destroy();
    }
}

/// Builds a `d_iov_t` over `len` bytes at `ptr`, full (iov_len = iov_buf_len = len).
pub fn iov(ptr: *mut u8, len: usize) -> d_iov_t {
    d_iov_t { iov_buf: ptr.cast(), iov_buf_len: len, iov_len: len }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_der_checks() {
        let daos = |rc| Error::Daos { call: "daos_cont_open2", rc, name: String::new() };
        assert!(daos(-1005).is_nonexistent() && !daos(-1005).is_existing());
        assert!(daos(-1004).is_existing() && !daos(-1004).is_nonexistent());
        assert!(!daos(-1002).is_nonexistent() && !Error::InvalidArg("x".into()).is_nonexistent());
        assert!(rc_is_nonexistent(-1005) && !rc_is_nonexistent(0) && !rc_is_nonexistent(1005));
    }

    #[test]
    fn only_the_daos_client_it_is_built_for() {
        assert!(check_version("libdaos.so.2", Some((2, 8, 0))).is_ok());
        assert!(check_version("libdaos.so.2", Some((2, 8, 3))).is_ok());
        for (v, says) in [
            (Some((2, 7, 0)), "DAOS client API 2.7.0 (as DAOS 2.6.1 to 2.6.5 report)"),
            (Some((3, 0, 0)), "DAOS client API 3.0.0"),
            (None, "without daos_version_get (DAOS 2.6.0 or older"),
        ] {
            let e = check_version("/opt/daos/lib64/libdaos.so.2", v).unwrap_err();
            let msg = e.to_string();
            assert!(msg.contains(says) && msg.contains("DAOS 2.8") && msg.contains(ALLOW_DAOS_ENV), "{msg}");
            assert!(msg.contains("/opt/daos/lib64/libdaos.so.2"), "{msg}");
        }
    }
}
