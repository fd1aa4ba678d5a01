// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//! GPU memory through the CUDA driver API, loaded at run time and never linked: the same
//! plugin runs on hosts without CUDA (it lists DRAM and OBJ) and on GPU hosts (VRAM too).
//!
//! The driver API (`libcuda.so.1`) rather than the runtime: it is stable across CUDA versions
//! and comes with the driver, so the plugin needs no CUDA toolkit of a given version.
//! `NIXL_DAOS_LIBCUDA` names another library to load (tests: tests/cuda-sim's stand-in).
//!
//! Nothing touches the GPU until a VRAM registration needs it: `probe` (every engine) only
//! loads the library and resolves its symbols; `cuInit` runs, and a device's primary context is
//! retained, at the first VRAM registration (`Cuda::device`). A process that never registers
//! VRAM has not initialised CUDA, so a child it forks may still use CUDA.
//!
//! Copies: on a stream of the plugin's own per thread and device (non-blocking, so they wait
//! for none of the consumer's work on the legacy default stream), asynchronous, then
//! synchronised before the copy counts as done: a copy from pageable memory may otherwise return
//! before the bytes reach the device. The caller's context is restored after each call, so the
//! plugin never changes which device a consumer's thread works on.
//! This module is the only place that calls into the driver.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::sync::OnceLock;

use parking_lot::Mutex;

use crate::error::Error;

/// Names the CUDA driver library to load instead of `libcuda.so.1`.
pub const LIBCUDA_ENV: &str = "NIXL_DAOS_LIBCUDA";
const DEFAULT_LIBCUDA: &str = "libcuda.so.1";

type CUresult = c_int;
type CUdevice = c_int;
type CUcontext = *mut c_void;
type CUstream = *mut c_void;
type CUdeviceptr = u64;

const CU_POINTER_ATTRIBUTE_MEMORY_TYPE: c_int = 2;
const CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: c_int = 9;
const CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: c_int = 11;
const CU_POINTER_ATTRIBUTE_RANGE_SIZE: c_int = 12;
const CU_MEMORYTYPE_HOST: c_uint = 1;
const CU_MEMORYTYPE_DEVICE: c_uint = 2;
/// cuMemHostRegister's flag: pinned for every context of the process.
const CU_MEMHOSTREGISTER_PORTABLE: c_uint = 1;
/// cuStreamCreate's flag: no implicit synchronisation with the legacy default stream.
const CU_STREAM_NON_BLOCKING: c_uint = 1;

/// The driver entry points the plugin uses, resolved once.
struct Api {
    cu_init: unsafe extern "C" fn(c_uint) -> CUresult,
    cu_device_get_count: unsafe extern "C" fn(*mut c_int) -> CUresult,
    cu_device_get: unsafe extern "C" fn(*mut CUdevice, c_int) -> CUresult,
    cu_primary_ctx_retain: unsafe extern "C" fn(*mut CUcontext, CUdevice) -> CUresult,
    cu_ctx_get_current: unsafe extern "C" fn(*mut CUcontext) -> CUresult,
    cu_ctx_set_current: unsafe extern "C" fn(CUcontext) -> CUresult,
    cu_stream_create: unsafe extern "C" fn(*mut CUstream, c_uint) -> CUresult,
    cu_stream_synchronize: unsafe extern "C" fn(CUstream) -> CUresult,
    cu_pointer_get_attribute: unsafe extern "C" fn(*mut c_void, c_int, CUdeviceptr) -> CUresult,
    cu_memcpy_dtoh_async: unsafe extern "C" fn(*mut c_void, CUdeviceptr, usize, CUstream) -> CUresult,
    cu_memcpy_htod_async: unsafe extern "C" fn(CUdeviceptr, *const c_void, usize, CUstream) -> CUresult,
    cu_mem_host_register: unsafe extern "C" fn(*mut c_void, usize, c_uint) -> CUresult,
    cu_mem_host_unregister: unsafe extern "C" fn(*mut c_void) -> CUresult,
    cu_get_error_name: unsafe extern "C" fn(CUresult, *mut *const c_char) -> CUresult,
}

/// The loaded driver (process-wide, never unloaded: device contexts outlive engines).
pub struct Cuda {
    api: Api,
    pub path: String,
    /// `cuInit` and the device count, the first time a device is asked for.
    init: OnceLock<Result<i32, String>>,
    /// Devices whose primary context this process retained, by ordinal.
    retained: Mutex<HashMap<i32, &'static Device>>,
    _lib: libloading::Library,
}

/// One device with its primary context retained.
pub struct Device {
    cuda: &'static Cuda,
    pub ordinal: i32,
    ctx: CUcontext,
}

// SAFETY: a CUcontext is a handle the driver lets any thread make current; it is only passed
// to the driver.
unsafe impl Send for Device {}
// SAFETY: as above; nothing in Device is mutated after it is made.
unsafe impl Sync for Device {}

thread_local! {
    /// This thread's copy stream per device (ordinal): made on first use, kept for the
    /// thread's life (lane threads live as long as their engine).
    static STREAMS: RefCell<HashMap<i32, usize>> = RefCell::new(HashMap::new());
}

/// One copy between the caller's device memory and host memory the plugin owns (raw: the
/// host ranges of one batch may overlap, where a write's descriptors do, and run in order).
pub enum Copy {
    /// `len` device bytes at `src` into host memory at `dst`.
    ToHost { dst: *mut u8, src: u64, len: usize },
    /// `len` host bytes at `src` into device memory at `dst`.
    ToDevice { src: *const u8, dst: u64, len: usize },
}

impl Cuda {
    /// The driver library of this process, loaded on first call: None when it does not load or
    /// lacks a symbol (said at debug level: a host without a GPU is not an error). Makes no
    /// driver call: `cuInit` waits for the first VRAM registration.
    pub fn probe() -> Option<&'static Cuda> {
        static CUDA: OnceLock<Option<&'static Cuda>> = OnceLock::new();
        *CUDA.get_or_init(|| {
            let path = std::env::var(LIBCUDA_ENV).ok().filter(|p| !p.is_empty()).unwrap_or(DEFAULT_LIBCUDA.into());
            match Cuda::load(&path) {
                Ok(c) => {
                    tracing::info!(lib = %c.path, "DAOS backend: CUDA driver found; VRAM supported");
                    Some(&*Box::leak(Box::new(c)))
                }
                Err(why) => {
                    tracing::debug!("DAOS backend: no VRAM support: {why}");
                    None
                }
            }
        })
    }

    fn load(path: &str) -> Result<Cuda, String> {
        // SAFETY: loading the CUDA driver runs its initialisers, which make no context and
        // start no work until cuInit.
        let lib = unsafe { libloading::Library::new(path) }.map_err(|e| format!("cannot load {path:?}: {e}"))?;
        macro_rules! sym {
            ($name:literal) => {
                // SAFETY: the symbol has the driver API's C signature the field declares (cuda.h).
                *unsafe { lib.get(concat!($name, "\0").as_bytes()) }
                    .map_err(|e| format!("{path:?} has no {}: {e}", $name))?
            };
        }
        let api = Api {
            cu_init: sym!("cuInit"),
            cu_device_get_count: sym!("cuDeviceGetCount"),
            cu_device_get: sym!("cuDeviceGet"),
            cu_primary_ctx_retain: sym!("cuDevicePrimaryCtxRetain"),
            cu_ctx_get_current: sym!("cuCtxGetCurrent"),
            cu_ctx_set_current: sym!("cuCtxSetCurrent"),
            cu_stream_create: sym!("cuStreamCreate"),
            cu_stream_synchronize: sym!("cuStreamSynchronize"),
            cu_pointer_get_attribute: sym!("cuPointerGetAttribute"),
            cu_memcpy_dtoh_async: sym!("cuMemcpyDtoHAsync_v2"),
            cu_memcpy_htod_async: sym!("cuMemcpyHtoDAsync_v2"),
            cu_mem_host_register: sym!("cuMemHostRegister_v2"),
            cu_mem_host_unregister: sym!("cuMemHostUnregister"),
            cu_get_error_name: sym!("cuGetErrorName"),
        };
        Ok(Cuda { api, path: path.to_string(), init: OnceLock::new(), retained: Mutex::default(), _lib: lib })
    }

    fn error_name(&self, rc: CUresult) -> String {
        let mut s: *const c_char = std::ptr::null();
        // SAFETY: valid out pointer; the driver returns a static string.
        match unsafe { (self.api.cu_get_error_name)(rc, &mut s) } {
            0 if !s.is_null() => {
                // SAFETY: a NUL-terminated static string of the driver's.
                unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned()
            }
            _ => format!("CUDA error {rc}"),
        }
    }

    fn check(&self, call: &'static str, device: i32, rc: CUresult) -> Result<(), Error> {
        if rc == 0 {
            return Ok(());
        }
        Err(Error::Cuda { call, device, rc, name: self.error_name(rc) })
    }

    /// `cuInit` and the number of devices, once per process.
    fn devices(&self) -> Result<i32, Error> {
        let r = self.init.get_or_init(|| {
            // SAFETY: plain driver calls with valid out pointers.
            let rc = unsafe { (self.api.cu_init)(0) };
            if rc != 0 {
                return Err(format!("cuInit failed: {}", self.error_name(rc)));
            }
            let mut n: c_int = 0;
            // SAFETY: as above.
            let rc = unsafe { (self.api.cu_device_get_count)(&mut n) };
            match (rc, n) {
                (0, n) if n > 0 => Ok(n),
                (0, _) => Err("the CUDA driver reports no device".into()),
                (rc, _) => Err(format!("cuDeviceGetCount failed: {}", self.error_name(rc))),
            }
        });
        r.clone().map_err(|why| Error::NotSupported(format!("VRAM is not usable here: {why} ({})", self.path)))
    }

    /// Device `ordinal`, its primary context retained on first use.
    pub fn device(&'static self, ordinal: u64) -> Result<&'static Device, Error> {
        let devices = self.devices()?;
        let ordinal = i32::try_from(ordinal).ok().filter(|&o| o < devices).ok_or_else(|| {
            Error::InvalidArg(format!(
                "VRAM devId {ordinal} is not a CUDA device of this process (devices 0-{}): a VRAM descriptor's devId \
                 is the CUDA device ordinal",
                devices - 1
            ))
        })?;
        let mut retained = self.retained.lock();
        if let Some(d) = retained.get(&ordinal) {
            return Ok(d);
        }
        let mut dev: CUdevice = 0;
        // SAFETY: valid out pointer.
        self.check("cuDeviceGet", ordinal, unsafe { (self.api.cu_device_get)(&mut dev, ordinal) })?;
        let mut ctx: CUcontext = std::ptr::null_mut();
        // SAFETY: valid out pointer and device.
        self.check("cuDevicePrimaryCtxRetain", ordinal, unsafe { (self.api.cu_primary_ctx_retain)(&mut ctx, dev) })?;
        let d: &'static Device = Box::leak(Box::new(Device { cuda: self, ordinal, ctx }));
        retained.insert(ordinal, d);
        Ok(d)
    }
}

/// The calling thread's context as it was, restored when dropped.
struct Entered<'a> {
    cuda: &'a Cuda,
    previous: CUcontext,
    changed: bool,
}

impl Drop for Entered<'_> {
    fn drop(&mut self) {
        if self.changed {
            // SAFETY: the context this thread had (possibly none), as the driver returned it.
            unsafe { (self.cuda.api.cu_ctx_set_current)(self.previous) };
        }
    }
}

impl Device {
    /// Makes this device's context current on the calling thread (the driver's copies and
    /// queries act on the current context) until the guard drops, which restores the thread's.
    fn enter(&self) -> Result<Entered<'_>, Error> {
        let api = &self.cuda.api;
        let mut previous: CUcontext = std::ptr::null_mut();
        // SAFETY: valid out pointer.
        self.cuda.check("cuCtxGetCurrent", self.ordinal, unsafe { (api.cu_ctx_get_current)(&mut previous) })?;
        let changed = previous != self.ctx;
        if changed {
            // SAFETY: a context retained by this process and never released.
            self.cuda.check("cuCtxSetCurrent", self.ordinal, unsafe { (api.cu_ctx_set_current)(self.ctx) })?;
        }
        Ok(Entered { cuda: self.cuda, previous, changed })
    }

    /// This thread's copy stream for this device (made on first use; needs the context).
    fn stream(&self) -> Result<CUstream, Error> {
        if let Some(s) = STREAMS.with(|m| m.borrow().get(&self.ordinal).copied()) {
            return Ok(s as CUstream);
        }
        let mut s: CUstream = std::ptr::null_mut();
        // SAFETY: valid out pointer; the context is current (the callers entered it).
        let rc = unsafe { (self.cuda.api.cu_stream_create)(&mut s, CU_STREAM_NON_BLOCKING) };
        self.cuda.check("cuStreamCreate", self.ordinal, rc)?;
        STREAMS.with(|m| m.borrow_mut().insert(self.ordinal, s as usize));
        Ok(s)
    }

    fn attribute<T: Default>(&self, attribute: c_int, ptr: u64) -> Result<T, CUresult> {
        let mut v = T::default();
        // SAFETY: `v` has the attribute's type (cuda.h: unsigned int, int, CUdeviceptr, size_t).
        let rc = unsafe { (self.cuda.api.cu_pointer_get_attribute)((&mut v as *mut T).cast(), attribute, ptr) };
        if rc == 0 {
            Ok(v)
        } else {
            Err(rc)
        }
    }

    /// Checks that [addr, addr + len) is device memory of this device, in one allocation; says
    /// what it found when it is not.
    pub fn check_range(&self, addr: u64, len: u64) -> Result<(), Error> {
        let _ctx = self.enter()?;
        let bad = |what: String| {
            Error::InvalidArg(format!(
                "VRAM range {addr:#x}+{len} on device {}: {what}; register device memory (cudaMalloc, a CUDA \
                 tensor) of the device named by devId",
                self.ordinal
            ))
        };
        match self.attribute::<c_uint>(CU_POINTER_ATTRIBUTE_MEMORY_TYPE, addr) {
            Ok(CU_MEMORYTYPE_DEVICE) => {}
            Ok(CU_MEMORYTYPE_HOST) => {
                return Err(bad("it is host memory known to CUDA (pinned), not device memory".into()))
            }
            Ok(t) => return Err(bad(format!("CUDA reports memory type {t}, not device memory"))),
            Err(rc) => {
                return Err(bad(format!(
                    "CUDA does not know the address ({}): host memory, or freed",
                    self.cuda.error_name(rc)
                )))
            }
        }
        let ordinal = self
            .attribute::<c_int>(CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, addr)
            .map_err(|rc| bad(format!("its device ordinal cannot be read ({})", self.cuda.error_name(rc))))?;
        if ordinal != self.ordinal {
            return Err(bad(format!("it is memory of device {ordinal}")));
        }
        let start = self.attribute::<u64>(CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, addr);
        let size = self.attribute::<usize>(CU_POINTER_ATTRIBUTE_RANGE_SIZE, addr);
        if let (Ok(start), Ok(size)) = (start, size) {
            if addr.checked_add(len).is_none_or(|end| end > start + size as u64) {
                return Err(bad(format!("it runs past its allocation ({start:#x}+{size})")));
            }
        }
        Ok(())
    }

    /// Runs `copies` in order on this thread's stream for the device, and returns once every
    /// byte has arrived (the stream synchronised): the first error, named, otherwise.
    ///
    /// # Safety
    /// Each host range is memory of the plugin's valid for the copy's direction, each device
    /// range device memory of this device; both stay allocated during the call (the device one
    /// is the caller's buffer of a live request).
    pub unsafe fn copy(&self, copies: &[Copy]) -> Result<(), Error> {
        let _ctx = self.enter()?;
        let stream = self.stream()?;
        let api = &self.cuda.api;
        let mut first = Ok(());
        for c in copies {
            // SAFETY: by this function's contract.
            let (call, rc) = unsafe {
                match *c {
                    Copy::ToHost { dst, src, len } => {
                        ("cuMemcpyDtoHAsync_v2", (api.cu_memcpy_dtoh_async)(dst.cast(), src, len, stream))
                    }
                    Copy::ToDevice { src, dst, len } => {
                        ("cuMemcpyHtoDAsync_v2", (api.cu_memcpy_htod_async)(dst, src.cast(), len, stream))
                    }
                }
            };
            if rc != 0 {
                first = self.cuda.check(call, self.ordinal, rc);
                break;
            }
        }
        // Also after a failed enqueue: the copies queued before it must not outlive the call.
        // SAFETY: this thread's stream of this device.
        let synced =
            self.cuda.check("cuStreamSynchronize", self.ordinal, unsafe { (api.cu_stream_synchronize)(stream) });
        first.and(synced)
    }

    /// Page-locks `len` bytes at `ptr` for every context (a staging buffer the copies use);
    /// false when the driver refuses (said once, at debug level: the copies are then from
    /// pageable memory, slower, the same bytes).
    ///
    /// # Safety
    /// `ptr..ptr + len` is an allocation that stays alive and unmoved until `unpin`.
    pub unsafe fn pin(&self, ptr: *mut u8, len: usize) -> bool {
        let Ok(_ctx) = self.enter() else { return false };
        // SAFETY: by this function's contract.
        let rc = unsafe { (self.cuda.api.cu_mem_host_register)(ptr.cast(), len, CU_MEMHOSTREGISTER_PORTABLE) };
        if rc != 0 {
            static SAID: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
            if !SAID.swap(true, std::sync::atomic::Ordering::Relaxed) {
                tracing::debug!(
                    "DAOS backend: staging buffers not pinned: cuMemHostRegister: {}",
                    self.cuda.error_name(rc)
                );
            }
            return false;
        }
        true
    }

    /// Unpins what `pin` pinned; false when the driver refused (the pages stay locked: the
    /// caller must then not free them).
    ///
    /// # Safety
    /// `ptr` was pinned by `pin` and is not in use by a copy.
    pub unsafe fn unpin(&self, ptr: *mut u8) -> bool {
        // SAFETY: by this function's contract.
        let rc = unsafe { (self.cuda.api.cu_mem_host_unregister)(ptr.cast()) };
        if rc != 0 {
            tracing::debug!("DAOS backend: cuMemHostUnregister: {}", self.cuda.error_name(rc));
        }
        rc == 0
    }
}
