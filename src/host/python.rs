//! Registers a C function with Python's `atexit` module, through the C API of the interpreter
//! the process runs (found with `dlsym`; the plugin does not link libpython).
//!
//! Python runs `atexit` callbacks in `Py_FinalizeEx` before it marks itself finalizing and
//! before it clears any module, so every buffer is still allocated then; the C `atexit`
//! handlers run only after Python has freed everything, too late for a fetch in flight.

use std::ffi::{c_char, c_int, c_void};

use libloading::os::unix::{Library, Symbol};

type PyObject = c_void;
type PyCFunction = unsafe extern "C" fn(*mut PyObject, *mut PyObject) -> *mut PyObject;

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
    gil_ensure: Symbol<unsafe extern "C" fn() -> c_int>,
    gil_release: Symbol<unsafe extern "C" fn(c_int)>,
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
// both valid for the life of the process and usable from any thread holding the GIL.
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
            gil_ensure: sym!("PyGILState_Ensure"),
            gil_release: sym!("PyGILState_Release"),
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

/// Registers `cb` with Python's `atexit` (once per process). Err when the host is not a
/// running Python or the registration failed; the interpreter is left as it was.
pub fn register_atexit(cb: fn()) -> Result<(), String> {
    let api = api()?;
    // SAFETY: a plain query, callable without the GIL.
    if unsafe { (api.is_initialized)() } == 0 {
        return Err("the Python interpreter is not initialised".into());
    }
    if CALLBACK.set(cb).is_err() {
        return Err("already registered".into());
    }
    let def = Box::leak(Box::new(PyMethodDef {
        name: c"nixl_daos_quiesce".as_ptr(),
        meth: trampoline,
        flags: METH_NOARGS,
        doc: c"Stops the NIXL DAOS plugin's progress threads before Python frees its objects.".as_ptr(),
    }));
    // SAFETY: the GIL is taken (or re-entered) for the calls below and given back after them;
    // every new reference is released, and a failed call's exception is cleared. `def` lives
    // for the rest of the process (leaked), as Python requires of a method definition.
    unsafe {
        let gil = (api.gil_ensure)();
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
        (api.gil_release)(gil);
        result
    }
}
