// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//! Whether the host process is exiting, and stopping DAOS before the host frees its buffers.
//!
//! At interpreter exit Python frees objects in an order of its own: the NumPy or torch buffers
//! of transfers still in flight may be freed before the transfer handles are released or the
//! agent is destroyed. Whatever drives DAOS then (a `daos_eq_poll`, which runs mercury and
//! libfabric's progress) lets the transport land a fetch's data into freed memory: on the real
//! engine a lane thread was caught in libfabric's memcpy, inside `daos_eq_poll`, while Python
//! unmapped a NumPy array (about 1 exit in 8). Seeing `Py_IsFinalizing` at the top of a lane's
//! loop is not enough: a poll that began just before finalization goes on for its whole slice.
//!
//! So every call that drives DAOS holds a [`Driving`] guard, and [`quiesce`] runs while the
//! host's memory is still intact (a Python `atexit` callback, see `python`; a C `atexit`
//! handler otherwise): it lets the transfers inside DAOS finish for at most [`EXIT_DRAIN`]
//! (1 s; `NIXL_DAOS_EXIT_DRAIN_MS` sets it), then marks the process as exiting and waits until
//! no thread drives DAOS any more. After it, nothing drives DAOS again: what was still in
//! flight is abandoned (left allocated, never completed by us), posts fail with
//! `ShuttingDown`, and releases stop waiting.
//!
//! `Py_IsFinalizing` (3.13+) or `_Py_IsFinalizing` (3.7-3.12) stays as a fallback for a Python
//! host where the callback could not be registered.

mod python;

use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Longest the exit waits for transfers inside DAOS to finish before abandoning them, unless
/// `NIXL_DAOS_EXIT_DRAIN_MS` says otherwise (0: abandon at once).
const EXIT_DRAIN: Duration = Duration::from_secs(1);
const EXIT_DRAIN_ENV: &str = "NIXL_DAOS_EXIT_DRAIN_MS";
/// Cap of `NIXL_DAOS_EXIT_DRAIN_MS`: an exit must not hang on a dead server.
const EXIT_DRAIN_MAX_MS: u64 = 600_000;
/// Longest the exit waits for the threads inside a DAOS call to leave it (a lane's poll slice
/// is 20 ms); past it the exit goes on, and a late fetch could still land.
const EXIT_STOP: Duration = Duration::from_secs(1);
const EXIT_TICK: Duration = Duration::from_millis(1);
/// How long the C exit handler lets threads of ours leave libdaos before it decides that one is
/// stuck there (see `on_exit_status`).
const EXIT_SETTLE: Duration = Duration::from_millis(50);

static EXITING: AtomicBool = AtomicBool::new(false);
/// Threads inside a call that drives DAOS (each holds a `Driving`).
static DRIVING: AtomicUsize = AtomicUsize::new(0);
/// Transfer operations inside DAOS, over every engine of the process.
static IN_DAOS: AtomicUsize = AtomicUsize::new(0);
/// Threads of ours inside a blocking libdaos call that nobody may be waiting for any more (a
/// pool connect past `create_backend`'s deadline); each holds an `InLibdaos`.
static UNWAITED: AtomicUsize = AtomicUsize::new(0);

extern "C" {
    /// glibc's on_exit (the libc crate binds atexit, whose handlers do not get the status).
    fn on_exit(cb: extern "C" fn(c_int, *mut std::ffi::c_void), arg: *mut std::ffi::c_void) -> c_int;
}

/// In a forked child: the parent's lane threads did not survive the fork, so neither did their
/// guards nor their operations (the parent's engines refuse to work in a child). Only stores,
/// as a fork handler must.
extern "C" fn in_forked_child() {
    DRIVING.store(0, Ordering::SeqCst);
    IN_DAOS.store(0, Ordering::SeqCst);
    UNWAITED.store(0, Ordering::SeqCst);
}

/// The C exit handler (glibc's `on_exit`, for the status): it runs at `exit()`, after Python
/// has finalized in a Python host, and before the libraries' ELF destructors.
///
/// Those destructors must not run while a thread of ours is still inside libdaos: libna's
/// unloads its transport plugin, and a pool connect left running past `create_backend`'s
/// deadline then jumps into unmapped code (SIGSEGV in `libna_plugin_ofi.so`, 2 exits of 64
/// after a refused `create_backend` on a three-engine DAOS 2.8 with one engine killed; 3 of 3
/// when the gap was widened). Such a thread cannot be stopped or waited for in bounded time,
/// so the process ends here instead, as `exit(status)` would, without the destructors: C
/// streams are flushed, the status is kept; what is skipped is the handlers registered before
/// this one and the libraries' destructors, which have nothing to save in a process that is
/// ending.
extern "C" fn on_exit_status(status: c_int, _arg: *mut std::ffi::c_void) {
    quiesce();
    crate::totals::report_at_exit();
    // Not one read: a thread that just called `drive()` counts itself for an instant before it
    // sees the exit, and a bounded call notices it within its 10 ms slice (daos::bounded).
    let inside = || UNWAITED.load(Ordering::SeqCst) + DRIVING.load(Ordering::SeqCst);
    wait_until(EXIT_SETTLE, || inside() == 0);
    let inside = inside();
    if inside > 0 {
        crate::log::exit_line(
            tracing::Level::WARN,
            &format!(
                "process exit: {inside} thread(s) still inside libdaos (a pool connect past its deadline, or \
                 a call that did not return); ending the process without running the libraries' destructors, \
                 which would unload code those threads run (exit status {status} kept)"
            ),
        );
        // SAFETY: fflush(NULL) flushes every C stream; _exit ends the process with the status
        // exit() was given, which is what this handler's caller was about to do.
        unsafe {
            libc::fflush(std::ptr::null_mut());
            libc::_exit(status);
        }
    }
}

/// Held by a thread of ours for as long as it may be inside a blocking libdaos call that its
/// caller stops waiting for at a deadline (see `on_exit_status`).
#[must_use]
pub struct InLibdaos(());

impl InLibdaos {
    pub fn enter() -> InLibdaos {
        UNWAITED.fetch_add(1, Ordering::SeqCst);
        InLibdaos(())
    }
}

impl Drop for InLibdaos {
    fn drop(&mut self) {
        UNWAITED.fetch_sub(1, Ordering::SeqCst);
    }
}

type IsFinalizing = unsafe extern "C" fn() -> c_int;

fn python_probe() -> Option<IsFinalizing> {
    static PROBE: OnceLock<Option<IsFinalizing>> = OnceLock::new();
    *PROBE.get_or_init(|| {
        // SAFETY: both calls only record the function pointers. `on_exit_status` runs
        // `quiesce` at exit (atomics, sleeps, a log line: all fine in an exit handler, and it
        // never blocks past its bounds), then may end the process (see there);
        // `in_forked_child` only stores to atomics, as a handler run in a forked child must.
        unsafe {
            on_exit(on_exit_status, std::ptr::null_mut());
            libc::pthread_atfork(None, None, Some(in_forked_child));
        }
        let this = libloading::os::unix::Library::this();
        for name in [&b"Py_IsFinalizing\0"[..], &b"_Py_IsFinalizing\0"[..]] {
            // SAFETY: both symbols have this signature in every CPython that exports them.
            if let Ok(f) = unsafe { this.get::<IsFinalizing>(name) } {
                return Some(*f);
            }
        }
        None
    })
}

/// Keeps this library mapped for the life of the process (`RTLD_NODELETE`): the `atexit`
/// handlers and threads an engine leaves behind (a lane abandoned on a dead server, a connect
/// thread past its deadline) run this library's code, so a host that `dlclose`s the plugin
/// after creating an engine would crash at exit without it (NIXL 1.5 does not, others might).
fn pin_self() {
    static PINNED: OnceLock<()> = OnceLock::new();
    PINNED.get_or_init(|| {
        // SAFETY: Dl_info is plain data, for which all zeroes is valid.
        let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
        // SAFETY: dladdr only reads the address (a function of this library) and fills `info`.
        let found = unsafe { libc::dladdr(pin_self as *const std::ffi::c_void, &mut info) } != 0;
        if !found || info.dli_fname.is_null() {
            tracing::debug!("cannot find this library's path (dladdr); it is not pinned");
            return;
        }
        // SAFETY: dladdr's file name is a NUL-terminated string owned by the loader, valid while
        // the library is loaded (it is: this code runs from it).
        let name = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) };
        let path = <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(name.to_bytes());
        // SAFETY: RTLD_NOLOAD only takes another reference to a library already loaded (this
        // one), so no initialiser runs; the reference is never given back.
        match unsafe {
            libloading::os::unix::Library::open(Some(path), libc::RTLD_NOW | libc::RTLD_NOLOAD | libc::RTLD_NODELETE)
        } {
            Ok(lib) => std::mem::forget(lib),
            Err(e) => tracing::debug!("could not pin {path:?} (RTLD_NODELETE): {e}"),
        }
    });
}

/// Arms the probes and, in a Python host, the `atexit` callback; called when an engine starts.
pub fn init() {
    pin_self();
    if python_probe().is_some() {
        static REGISTERED: OnceLock<()> = OnceLock::new();
        REGISTERED.get_or_init(|| match python::register_atexit(quiesce) {
            Ok(python::Registered::Queued) => {
                tracing::debug!("Python atexit callback queued for the main thread (registered at its next bytecode)")
            }
            // libpython loaded into a host that is not a running Python (a C++ program that
            // links it, say): the C `atexit` handler is the right one there, so no warning.
            Err(python::NotRegistered::NotPython(why)) => {
                tracing::debug!("no Python atexit callback: {why}")
            }
            Err(python::NotRegistered::Failed(why)) => tracing::warn!(
                "could not register a Python atexit callback ({why}); exiting with transfers in flight may crash"
            ),
        });
    }
}

/// True once the host process has started to exit.
pub fn exiting() -> bool {
    // SeqCst: pairs with the counter in `drive` (see there).
    if EXITING.load(Ordering::SeqCst) {
        return true;
    }
    // SAFETY: the interpreter's finalizing check reads one atomic field of its runtime state.
    let py = python_probe().is_some_and(|f| unsafe { f() } != 0);
    if py {
        EXITING.store(true, Ordering::SeqCst);
    }
    py
}

/// Held around every call that drives DAOS (polls, event tests, launches).
#[must_use]
pub struct Driving(());

impl Drop for Driving {
    fn drop(&mut self) {
        DRIVING.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A guard for driving DAOS; None once the host is exiting. Counted before the check, both
/// SeqCst: either `quiesce` sees this thread counted and waits for it, or this thread sees
/// `EXITING` and does not touch DAOS.
pub fn drive() -> Option<Driving> {
    DRIVING.fetch_add(1, Ordering::SeqCst);
    if exiting() {
        DRIVING.fetch_sub(1, Ordering::SeqCst);
        return None;
    }
    Some(Driving(()))
}

/// Counts transfer operations inside DAOS (launched and not yet reaped), for the exit's drain.
pub fn in_daos_add(n: usize) {
    IN_DAOS.fetch_add(n, Ordering::SeqCst);
}

pub fn in_daos_sub(n: usize) {
    IN_DAOS.fetch_sub(n, Ordering::SeqCst);
}

/// The exit's drain bound from the value of `NIXL_DAOS_EXIT_DRAIN_MS` (None: unset).
fn exit_drain(value: Option<&str>) -> Duration {
    let Some(v) = value.map(str::trim).filter(|v| !v.is_empty()) else { return EXIT_DRAIN };
    match v.parse::<u64>() {
        Ok(ms) if ms <= EXIT_DRAIN_MAX_MS => Duration::from_millis(ms),
        _ => {
            crate::log::exit_line(
                tracing::Level::WARN,
                &format!(
                    "{EXIT_DRAIN_ENV}={v:?} is not a number of milliseconds from 0 to {EXIT_DRAIN_MAX_MS}; using {} ms",
                    EXIT_DRAIN.as_millis()
                ),
            );
            EXIT_DRAIN
        }
    }
}

/// Waits until `done` or `bound` passes; true when done.
fn wait_until(bound: Duration, done: impl Fn() -> bool) -> bool {
    let until = Instant::now() + bound;
    loop {
        if done() {
            return true;
        }
        if Instant::now() >= until {
            return false;
        }
        std::thread::sleep(EXIT_TICK);
    }
}

/// Logs through `crate::log::exit_line`: it also runs from the C exit handler, where `tracing`
/// cannot.
///
/// The host is about to exit, its memory still intact: lets the transfers inside DAOS finish
/// (bounded), then stops every thread from driving DAOS, and returns once none does. Idempotent.
pub fn quiesce() {
    // `exiting()`, not the flag alone: in a Python host whose atexit callback could not be
    // registered, this runs from the C atexit handler after Python finalized, when buffers may
    // be freed already; draining then would only wait (1 s) and let DAOS land data in them.
    if !exiting() {
        let (t0, at_start) = (Instant::now(), IN_DAOS.load(Ordering::SeqCst));
        let bound = exit_drain(std::env::var(EXIT_DRAIN_ENV).ok().as_deref());
        let drained = wait_until(bound, || IN_DAOS.load(Ordering::SeqCst) == 0);
        let (left, waited) = (IN_DAOS.load(Ordering::SeqCst), t0.elapsed());
        if !drained {
            crate::log::exit_line(
                tracing::Level::DEBUG,
                &format!("process exit: abandoning {left} DAOS operation(s) after {waited:?}"),
            );
        } else if at_start > 0 {
            crate::log::exit_line(
                tracing::Level::DEBUG,
                &format!("process exit: {at_start} DAOS operation(s) in flight finished in {waited:?}"),
            );
        }
    }
    EXITING.store(true, Ordering::SeqCst);
    if !wait_until(EXIT_STOP, || DRIVING.load(Ordering::SeqCst) == 0) {
        crate::log::exit_line(
            tracing::Level::WARN,
            &format!(
                "process exit: {} thread(s) still inside a DAOS call after {EXIT_STOP:?}",
                DRIVING.load(Ordering::SeqCst)
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_running_test_process_is_not_exiting() {
        super::init();
        assert!(!super::exiting());
        let g = drive().expect("not exiting, so DAOS may be driven");
        assert!(DRIVING.load(Ordering::SeqCst) >= 1);
        drop(g);
    }

    #[test]
    fn exit_drain_bound_from_the_environment() {
        assert_eq!(exit_drain(None), EXIT_DRAIN);
        assert_eq!(exit_drain(Some("")), EXIT_DRAIN);
        assert_eq!(exit_drain(Some("0")), Duration::ZERO);
        assert_eq!(exit_drain(Some(" 2500 ")), Duration::from_millis(2500));
        assert_eq!(exit_drain(Some("-1")), EXIT_DRAIN);
        assert_eq!(exit_drain(Some("1s")), EXIT_DRAIN);
        assert_eq!(exit_drain(Some("600001")), EXIT_DRAIN);
    }

    #[test]
    fn waiting_is_bounded() {
        let t0 = Instant::now();
        assert!(!wait_until(Duration::from_millis(20), || false));
        assert!(t0.elapsed() >= Duration::from_millis(20));
        assert!(wait_until(Duration::from_secs(10), || true));
    }
}
