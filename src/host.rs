//! Whether the host process is exiting.
//!
//! At interpreter exit Python frees objects in an order of its own: the NumPy or torch buffers
//! of transfers still in flight may be unmapped before the transfer handles are released or
//! the agent is destroyed, and a progress thread that goes on polling DAOS then lets it copy
//! into unmapped memory (in daos-sim the copy happens inside `daos_eq_poll`). Once the host
//! is exiting, the lanes therefore stop driving DAOS: what is in flight is abandoned (left
//! allocated, never completed by us), and releases stop waiting for it.
//!
//! Two signals: a C `atexit` handler (any host calling `exit`), and, in a Python host,
//! `Py_IsFinalizing` (3.13+) or `_Py_IsFinalizing` (3.7-3.12), which turns true before
//! Python starts clearing modules. Both only read flags; neither needs the GIL.

use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

static EXITING: AtomicBool = AtomicBool::new(false);

extern "C" {
    fn atexit(cb: extern "C" fn()) -> c_int;
}

extern "C" fn on_exit() {
    EXITING.store(true, Ordering::SeqCst);
}

type IsFinalizing = unsafe extern "C" fn() -> c_int;

fn python_probe() -> Option<IsFinalizing> {
    static PROBE: OnceLock<Option<IsFinalizing>> = OnceLock::new();
    *PROBE.get_or_init(|| {
        // SAFETY: registering a function that only stores a flag.
        unsafe { atexit(on_exit) };
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

/// Arms the probes; called when an engine starts.
pub fn init() {
    let _ = python_probe();
}

/// True once the host process has started to exit.
pub fn exiting() -> bool {
    if EXITING.load(Ordering::Relaxed) {
        return true;
    }
    // SAFETY: the interpreter's finalizing check reads one atomic field of its runtime state.
    let py = python_probe().is_some_and(|f| unsafe { f() } != 0);
    if py {
        EXITING.store(true, Ordering::SeqCst);
    }
    py
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_running_test_process_is_not_exiting() {
        super::init();
        assert!(!super::exiting());
    }
}
