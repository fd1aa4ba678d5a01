// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//! GPU memory through the CUDA driver API, loaded at run time and never linked: the same
//! plugin runs on hosts without CUDA (it lists DRAM and OBJ) and on GPU hosts (VRAM too).
//!
//! The driver API (`libcuda.so.1`) rather than the runtime: it is stable across CUDA versions
//! and comes with the driver, so the plugin needs no CUDA toolkit of a given version.
//! `NIXL_DAOS_LIBCUDA` names another library to load (tests: tests/cuda-sim's stand-in).
//! `probe` loads it and calls `cuInit`, which makes no context; a device's primary context is
//! retained the first time a VRAM registration names the device (`device`), so a CPU-only
//! consumer on a GPU host pays nothing.
//!
//! Every VRAM byte moves between the caller's device memory and the plugin's staging buffers
//! (host memory the plugin owns) with synchronous copies on the lane thread that sends or
//! completes the DAOS RPC, so one chunk's copy overlaps the other chunks' RPCs in DAOS, and
//! nothing of DAOS ever holds a device pointer.
//! This module is the only place that calls into the driver.

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
type CUdeviceptr = u64;

const CU_POINTER_ATTRIBUTE_MEMORY_TYPE: c_int = 2;
const CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: c_int = 9;
const CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: c_int = 11;
const CU_POINTER_ATTRIBUTE_RANGE_SIZE: c_int = 12;
const CU_MEMORYTYPE_HOST: c_uint = 1;
const CU_MEMORYTYPE_DEVICE: c_uint = 2;

/// The driver entry points the plugin uses, resolved once.
struct Api {
    cu_init: unsafe extern "C" fn(c_uint) -> CUresult,
    cu_device_get_count: unsafe extern "C" fn(*mut c_int) -> CUresult,
    cu_device_get: unsafe extern "C" fn(*mut CUdevice, c_int) -> CUresult,
    cu_primary_ctx_retain: unsafe extern "C" fn(*mut CUcontext, CUdevice) -> CUresult,
    cu_ctx_set_current: unsafe extern "C" fn(CUcontext) -> CUresult,
    cu_pointer_get_attribute: unsafe extern "C" fn(*mut c_void, c_int, CUdeviceptr) -> CUresult,
    cu_memcpy_dtoh: unsafe extern "C" fn(*mut c_void, CUdeviceptr, usize) -> CUresult,
    cu_memcpy_htod: unsafe extern "C" fn(CUdeviceptr, *const c_void, usize) -> CUresult,
    cu_get_error_name: unsafe extern "C" fn(CUresult, *mut *const c_char) -> CUresult,
    cu_mem_host_register: unsafe extern "C" fn(*mut c_void, usize, c_uint) -> CUresult,
    cu_mem_host_unregister: unsafe extern "C" fn(*mut c_void) -> CUresult,
}

/// cuMemHostRegister's flag: pinned for every context of the process.
const CU_MEMHOSTREGISTER_PORTABLE: c_uint = 1;

/// The loaded driver (process-wide, never unloaded: device contexts outlive engines).
pub struct Cuda {
    api: Api,
    pub path: String,
    pub devices: i32,
    /// Devices whose primary context this process retained, by ordinal.
    retained: Mutex<HashMap<i32, &'static Device>>,
    _lib: libloading::Library,
}

/// One device with its primary context retained.
pub struct Device {
    pub cuda: &'static Cuda,
    pub ordinal: i32,
    ctx: CUcontext,
}

// SAFETY: a CUcontext is a handle the driver lets any thread make current; it is only passed
// to the driver.
unsafe impl Send for Device {}
// SAFETY: as above; nothing in Device is mutated after it is made.
unsafe impl Sync for Device {}

impl Cuda {
    /// The driver of this process, loaded on first call: None when no library loads, a symbol
    /// is missing, `cuInit` fails or there is no device (said at debug level: a host without a
    /// GPU is not an error).
    pub fn probe() -> Option<&'static Cuda> {
        static CUDA: OnceLock<Option<&'static Cuda>> = OnceLock::new();
        *CUDA.get_or_init(|| {
            let path = std::env::var(LIBCUDA_ENV).ok().filter(|p| !p.is_empty()).unwrap_or(DEFAULT_LIBCUDA.into());
            match Cuda::load(&path) {
                Ok(c) => {
                    tracing::info!(lib = %c.path, devices = c.devices, "DAOS backend: CUDA driver found; VRAM supported");
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
            cu_ctx_set_current: sym!("cuCtxSetCurrent"),
            cu_pointer_get_attribute: sym!("cuPointerGetAttribute"),
            cu_memcpy_dtoh: sym!("cuMemcpyDtoH_v2"),
            cu_memcpy_htod: sym!("cuMemcpyHtoD_v2"),
            cu_get_error_name: sym!("cuGetErrorName"),
            cu_mem_host_register: sym!("cuMemHostRegister_v2"),
            cu_mem_host_unregister: sym!("cuMemHostUnregister"),
        };
        let mut cuda = Cuda { api, path: path.to_string(), devices: 0, retained: Mutex::default(), _lib: lib };
        // SAFETY: plain driver calls with valid out pointers.
        let rc = unsafe { (cuda.api.cu_init)(0) };
        if rc != 0 {
            return Err(format!("cuInit failed: {}", cuda.error_name(rc)));
        }
        let mut n: c_int = 0;
        // SAFETY: as above.
        let rc = unsafe { (cuda.api.cu_device_get_count)(&mut n) };
        if rc != 0 || n <= 0 {
            return Err(format!("no CUDA device ({})", if rc != 0 { cuda.error_name(rc) } else { "0 devices".into() }));
        }
        cuda.devices = n;
        Ok(cuda)
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

    /// Page-locks `len` bytes at `ptr` for every context (the staging buffers the copies use);
    /// false when the driver refuses (said once, at debug level: copies then go through the
    /// driver's own bounce buffers, slower but the same bytes).
    ///
    /// # Safety
    /// `ptr..ptr + len` is an allocation that stays alive and unmoved until `unpin`.
    pub unsafe fn pin(&self, ptr: *mut u8, len: usize) -> bool {
        // A context must be current: the first retained device's (a VRAM I/O has one).
        let Some(dev) = self.retained.lock().values().next().copied() else { return false };
        if dev.enter().is_err() {
            return false;
        }
        // SAFETY: by this function's contract.
        let rc = unsafe { (self.api.cu_mem_host_register)(ptr.cast(), len, CU_MEMHOSTREGISTER_PORTABLE) };
        if rc != 0 {
            static SAID: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
            if !SAID.swap(true, std::sync::atomic::Ordering::Relaxed) {
                tracing::debug!("DAOS backend: staging buffers not pinned: cuMemHostRegister: {}", self.error_name(rc));
            }
            return false;
        }
        true
    }

    /// Unpins what `pin` pinned.
    ///
    /// # Safety
    /// `ptr` was pinned by `pin` and is not in use by a copy.
    pub unsafe fn unpin(&self, ptr: *mut u8) {
        // SAFETY: by this function's contract; a failure leaves the pages locked, nothing worse.
        let rc = unsafe { (self.api.cu_mem_host_unregister)(ptr.cast()) };
        if rc != 0 {
            tracing::debug!("DAOS backend: cuMemHostUnregister: {}", self.error_name(rc));
        }
    }

    /// Device `ordinal`, its primary context retained on first use.
    pub fn device(&'static self, ordinal: u64) -> Result<&'static Device, Error> {
        let ordinal = i32::try_from(ordinal).ok().filter(|&o| o < self.devices).ok_or_else(|| {
            Error::InvalidArg(format!(
                "VRAM devId {ordinal} is not a CUDA device of this process (devices 0-{}): a VRAM descriptor's devId \
                 is the CUDA device ordinal",
                self.devices - 1
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

impl Device {
    /// Makes this device's context current on the calling thread (the driver's copies and
    /// queries act on the current context).
    fn enter(&self) -> Result<(), Error> {
        // SAFETY: a context retained by this process and never released.
        self.cuda.check("cuCtxSetCurrent", self.ordinal, unsafe { (self.cuda.api.cu_ctx_set_current)(self.ctx) })
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
        self.enter()?;
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

    /// Copies `dst.len()` bytes of device memory at `src` into host memory.
    ///
    /// # Safety
    /// `src..src + dst.len()` is device memory of this device that stays allocated during the
    /// call (the caller's buffer of a live request).
    pub unsafe fn to_host(&self, dst: &mut [u8], src: u64) -> Result<(), Error> {
        self.enter()?;
        // SAFETY: a host buffer of dst.len() bytes and, by this function's contract, a device
        // range of as many.
        let rc = unsafe { (self.cuda.api.cu_memcpy_dtoh)(dst.as_mut_ptr().cast(), src, dst.len()) };
        self.cuda.check("cuMemcpyDtoH_v2", self.ordinal, rc)
    }

    /// Copies `src` into device memory at `dst`.
    ///
    /// # Safety
    /// `dst..dst + src.len()` is device memory of this device that stays allocated during the
    /// call (the caller's buffer of a live request).
    pub unsafe fn to_device(&self, dst: u64, src: &[u8]) -> Result<(), Error> {
        self.enter()?;
        // SAFETY: as in `to_host`, the other way.
        let rc = unsafe { (self.cuda.api.cu_memcpy_htod)(dst, src.as_ptr().cast(), src.len()) };
        self.cuda.check("cuMemcpyHtoD_v2", self.ordinal, rc)
    }
}
