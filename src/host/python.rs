// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//! Registers a C function with Python's `atexit` module, through the C API of the interpreter
//! the process runs (found with `dlsym`; the plugin does not link libpython).
//!
//! Python runs `atexit` callbacks in `Py_FinalizeEx` before it marks itself finalizing and
//! before it clears any module, so every buffer is still allocated then; the C `atexit`
//! handlers run only after Python has freed everything, too late for a fetch in flight.
//!
//! The registration never waits for the GIL. `create_backend` runs inside NIXL's agent lock
//! and NIXL's Python binding gives the GIL up around it, so blocking on the GIL there deadlocks
//! with any Python thread that holds the GIL while it waits for the agent lock. The
//! registration is queued with `Py_AddPendingCall`, which needs no lock, and the main thread
//! runs it at its next bytecode boundary. `Py_FinalizeEx` runs queued calls before the `atexit`
//! callbacks (CPython 3.8 and later), so a queued registration is never too late. (It is always
//! queued, even from a thread that may hold the GIL: `PyGILState_Check` answers 1 on any thread
//! once a sub-interpreter exists, so it cannot tell.)

use std::ffi::{c_char, c_int, c_void};

use libloading::os::unix::{Library, Symbol};

type PyObject = c_void;
type PyCFunction = unsafe extern "C" fn(*mut PyObject, *mut PyObject) -> *mut PyObject;
/// What `Py_AddPendingCall` runs: 0 on success, -1 with an exception set on failure.
type PendingCall = unsafe extern "C" fn(*mut c_void) -> c_int;

/// CPython's `PyMethodDef`, unchanged since Python 2.
#[repr(C)]
struct PyMethodDef {
    name: *const c_char,
    meth: PyCFunction,
    flags: c_int,
    doc: *const c_char,
}

const METH_NOARGS: c_int = 0x0004;

/// The C API calls used here; all stable-ABI functions of every CPython 3.
struct Api {
    is_initialized: Symbol<unsafe extern "C" fn() -> c_int>,
    add_pending_call: Symbol<unsafe extern "C" fn(PendingCall, *mut c_void) -> c_int>,
    import: Symbol<unsafe extern "C" fn(*const c_char) -> *mut PyObject>,
    getattr: Symbol<unsafe extern "C" fn(*mut PyObject, *const c_char) -> *mut PyObject>,
    new_function: Symbol<unsafe extern "C" fn(*mut PyMethodDef, *mut PyObject, *mut PyObject) -> *mut PyObject>,
    call: Symbol<unsafe extern "C" fn(*mut PyObject, ...) -> *mut PyObject>,
    decref: Symbol<unsafe extern "C" fn(*mut PyObject)>,
    incref: Symbol<unsafe extern "C" fn(*mut PyObject)>,
    err_clear: Symbol<unsafe extern "C" fn()>,
    none: *mut PyObject,
}

// SAFETY: function pointers into the interpreter and the address of its `None` singleton,
// both valid for the life of the process; each call site says what its call needs (the GIL
// for most, none for `Py_IsInitialized` and `Py_AddPendingCall`).
unsafe impl Send for Api {}
// SAFETY: as above; the struct is never mutated after it is built.
unsafe impl Sync for Api {}

fn api() -> Result<&'static Api, String> {
    static API: std::sync::OnceLock<Result<Api, String>> = std::sync::OnceLock::new();
    API.get_or_init(|| {
        let this = Library::this();
        macro_rules! sym {
            ($name:literal) => {
                // SAFETY: each symbol is declared with its C API signature (Python 3 headers).
                unsafe { this.get(concat!($name, "\0").as_bytes()) }.map_err(|e| format!("{}: {e}", $name))?
            };
        }
        // SAFETY: `_Py_NoneStruct` is the interpreter's `None` object (its address is `Py_None`).
        let none: Symbol<*mut PyObject> = unsafe { this.get(b"_Py_NoneStruct\0") }.map_err(|e| e.to_string())?;
        Ok(Api {
            is_initialized: sym!("Py_IsInitialized"),
            add_pending_call: sym!("Py_AddPendingCall"),
            import: sym!("PyImport_ImportModule"),
            getattr: sym!("PyObject_GetAttrString"),
            new_function: sym!("PyCFunction_NewEx"),
            call: sym!("PyObject_CallFunctionObjArgs"),
            decref: sym!("Py_DecRef"),
            incref: sym!("Py_IncRef"),
            err_clear: sym!("PyErr_Clear"),
            none: *none,
        })
    })
    .as_ref()
    .map_err(Clone::clone)
}

/// What the Python callback runs (set once, by `register_atexit`).
static CALLBACK: std::sync::OnceLock<fn()> = std::sync::OnceLock::new();

unsafe extern "C" fn trampoline(_module: *mut PyObject, _args: *mut PyObject) -> *mut PyObject {
    if let Some(cb) = CALLBACK.get() {
        // A panic must not unwind into the interpreter.
        let _ = std::panic::catch_unwind(*cb);
    }
    match api() {
        Ok(api) => {
            // SAFETY: called by Python with the GIL held; returns a new reference to None.
            unsafe { (api.incref)(api.none) };
            api.none
        }
        // Unreachable: Python could only call us after `api()` succeeded.
        Err(_) => std::ptr::null_mut(),
    }
}

/// Why the callback is not registered.
#[derive(Debug)]
pub enum NotRegistered {
    /// The host is not a running Python (no interpreter, or one not initialised): nothing to do.
    NotPython(String),
    /// A running Python refused or failed the registration.
    Failed(String),
}

impl std::fmt::Display for NotRegistered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotRegistered::NotPython(why) | NotRegistered::Failed(why) => f.write_str(why),
        }
    }
}

/// How the registration went when `register_atexit` returned.
#[derive(Debug, PartialEq, Eq)]
pub enum Registered {
    /// Queued for the main thread; its outcome is logged when it runs.
    Queued,
}

/// Registers `cb` with Python's `atexit` (once per process), without ever waiting for the GIL
/// (see the module's docs). The interpreter is left as it was on failure.
pub fn register_atexit(cb: fn()) -> Result<Registered, NotRegistered> {
    let api = api().map_err(NotRegistered::NotPython)?;
    // SAFETY: a plain query, callable without the GIL.
    if unsafe { (api.is_initialized)() } == 0 {
        return Err(NotRegistered::NotPython("the Python interpreter is not initialised".into()));
    }
    if CALLBACK.set(cb).is_err() {
        return Err(NotRegistered::Failed("already registered".into()));
    }
    // SAFETY: Py_AddPendingCall may be called from any thread without the GIL; the function
    // it queues has the signature Python expects and ignores its argument.
    if unsafe { (api.add_pending_call)(register_pending, std::ptr::null_mut()) } != 0 {
        return Err(NotRegistered::Failed("Py_AddPendingCall refused (its queue is full)".into()));
    }
    Ok(Registered::Queued)
}

/// Run by Python's main thread with the GIL held, at a bytecode boundary or in `Py_FinalizeEx`
/// before the `atexit` callbacks. Always returns 0: a failure is logged and cleared, since an
/// exception raised from here would surface in whatever the main thread happened to run.
unsafe extern "C" fn register_pending(_arg: *mut c_void) -> c_int {
    let outcome = std::panic::catch_unwind(|| match api() {
        // SAFETY: Python runs pending calls in the main thread, holding the GIL.
        Ok(api) => unsafe { register_with_gil(api) },
        Err(e) => Err(e),
    });
    match outcome {
        Ok(Ok(())) => tracing::debug!(
            "Python atexit callback registered (from the main thread): DAOS stops before Python frees buffers"
        ),
        Ok(Err(e)) => tracing::warn!(
            "could not register a Python atexit callback ({e}); exiting with transfers in flight may crash"
        ),
        Err(_) => tracing::warn!(
            "registering the Python atexit callback panicked; exiting with transfers in flight may crash"
        ),
    }
    0
}

/// `atexit.register(<trampoline>)`.
///
/// # Safety
/// The calling thread must hold the GIL.
unsafe fn register_with_gil(api: &Api) -> Result<(), String> {
    static DEF: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    // Python keeps a pointer to the method definition for the life of the function object,
    // so it is leaked (once: this runs once per process).
    let def = *DEF.get_or_init(|| {
        Box::into_raw(Box::new(PyMethodDef {
            name: c"nixl_daos_quiesce".as_ptr(),
            meth: trampoline,
            flags: METH_NOARGS,
            doc: c"Stops the NIXL DAOS plugin's progress threads before Python frees its objects.".as_ptr(),
        })) as usize
    }) as *mut PyMethodDef;
    // SAFETY: the caller holds the GIL; every new reference is released, and a failed call's
    // exception is cleared; `def` lives for the rest of the process.
    unsafe {
        let result = (|| {
            let module = (api.import)(c"atexit".as_ptr());
            if module.is_null() {
                return Err("import atexit failed".to_string());
            }
            let register = (api.getattr)(module, c"register".as_ptr());
            (api.decref)(module);
            if register.is_null() {
                return Err("atexit.register is missing".to_string());
            }
            let func = (api.new_function)(def, std::ptr::null_mut(), std::ptr::null_mut());
            if func.is_null() {
                (api.decref)(register);
                return Err("PyCFunction_NewEx failed".to_string());
            }
            let out = (api.call)(register, func, std::ptr::null_mut::<PyObject>());
            (api.decref)(func);
            (api.decref)(register);
            if out.is_null() {
                return Err("atexit.register raised".to_string());
            }
            (api.decref)(out);
            Ok(())
        })();
        if result.is_err() {
            (api.err_clear)();
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A host that links libpython without running it (issue 9's review, item 6) is not a
    /// Python host: the registration says so (logged at debug, not as a warning).
    #[test]
    fn libpython_loaded_but_not_initialised_is_not_python() {
        const LIBPYTHON: &str = "libpython3.11.so.1.0";
        // SAFETY: loading libpython runs no Python code (nothing is initialised); RTLD_GLOBAL
        // makes its symbols visible to `Library::this()`, as in a host linked with it.
        let lib = unsafe {
            Library::open(Some(LIBPYTHON), libloading::os::unix::RTLD_NOW | libloading::os::unix::RTLD_GLOBAL)
        };
        let Ok(lib) = lib else {
            eprintln!("skipped: {LIBPYTHON} is not installed");
            return;
        };
        assert!(api().is_ok(), "the C API resolves from the loaded libpython");
        match register_atexit(|| {}) {
            Err(NotRegistered::NotPython(why)) => assert!(why.contains("not initialised"), "{why}"),
            other => panic!("expected NotPython, got {other:?}"),
        }
        assert!(CALLBACK.get().is_none(), "a refused registration keeps no callback");
        std::mem::forget(lib); // symbols stay resolved in `API` for the process's life
    }
}
