// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//! cuda-sim: the CUDA driver calls the plugin makes, with "device" memory that lives in host
//! memory and is tracked as the device's (README.md). Exported under the driver's own names
//! and C signatures.

use std::alloc::Layout;
use std::cell::Cell;
use std::collections::BTreeMap;
use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};

use parking_lot::Mutex;

type CUresult = c_int;
type CUdevice = c_int;
type CUdeviceptr = u64;
type CUcontext = *mut c_void;

const CUDA_SUCCESS: CUresult = 0;
const CUDA_ERROR_INVALID_VALUE: CUresult = 1;
const CUDA_ERROR_OUT_OF_MEMORY: CUresult = 2;
const CUDA_ERROR_NOT_INITIALIZED: CUresult = 3;
const CUDA_ERROR_NO_DEVICE: CUresult = 100;
const CUDA_ERROR_INVALID_DEVICE: CUresult = 101;
const CUDA_ERROR_INVALID_CONTEXT: CUresult = 201;
const CUDA_ERROR_LAUNCH_FAILED: CUresult = 719;

const CU_POINTER_ATTRIBUTE_CONTEXT: c_int = 1;
const CU_POINTER_ATTRIBUTE_MEMORY_TYPE: c_int = 2;
const CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: c_int = 9;
const CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: c_int = 11;
const CU_POINTER_ATTRIBUTE_RANGE_SIZE: c_int = 12;
const CU_MEMORYTYPE_DEVICE: c_uint = 2;

/// The driver aligns allocations to at least 256 bytes.
const ALIGN: usize = 256;

struct Alloc {
    len: usize,
    device: CUdevice,
}

struct State {
    initialized: bool,
    devices: c_int,
    /// Live allocations by start address.
    allocs: BTreeMap<u64, Alloc>,
    /// Primary contexts retained, per device (the context is a fixed non-null token per device).
    retained: BTreeMap<CUdevice, u64>,
    /// Calls to fail, by name, and how many more times.
    fail: BTreeMap<String, u64>,
    /// Host ranges page-locked by cuMemHostRegister, by start address.
    pinned: BTreeMap<u64, usize>,
    /// Streams by id: the device they were made on and their queued copies, which run only
    /// when the stream is synchronised (so a caller that does not synchronise sees old bytes).
    streams: BTreeMap<usize, (CUdevice, Vec<Pending>)>,
    next_stream: usize,
}

/// A queued asynchronous copy: (to, from, bytes), raw addresses.
struct Pending(usize, usize, usize);

static STATE: Mutex<State> = Mutex::new(State {
    initialized: false,
    devices: 1,
    allocs: BTreeMap::new(),
    retained: BTreeMap::new(),
    fail: BTreeMap::new(),
    pinned: BTreeMap::new(),
    streams: BTreeMap::new(),
    next_stream: 1,
});
static LATENCY_US: AtomicU64 = AtomicU64::new(0);
static DTOH: AtomicU64 = AtomicU64::new(0);
static HTOD: AtomicU64 = AtomicU64::new(0);
static DTOH_BYTES: AtomicU64 = AtomicU64::new(0);
static HTOD_BYTES: AtomicU64 = AtomicU64::new(0);
static LAST_DEVICE: AtomicI64 = AtomicI64::new(-1);

thread_local! {
    /// The calling thread's current context (a device's token), as cuCtxSetCurrent sets it.
    static CURRENT: Cell<usize> = const { Cell::new(0) };
}

/// The context token of `device`: device + 1, never null.
fn token(device: CUdevice) -> usize {
    device as usize + 1
}

/// The allocation holding [addr, addr + len): (start, device).
fn find(s: &State, addr: u64, len: u64) -> Option<(u64, &Alloc)> {
    let (&start, a) = s.allocs.range(..=addr).next_back()?;
    let end = start + a.len as u64;
    (addr < end && addr.checked_add(len)? <= end).then_some((start, a))
}

fn should_fail(s: &mut State, call: &str) -> bool {
    match s.fail.get_mut(call) {
        Some(n) if *n > 0 => {
            *n -= 1;
            true
        }
        _ => false,
    }
}

#[no_mangle]
pub extern "C" fn cuInit(flags: c_uint) -> CUresult {
    if flags != 0 {
        return CUDA_ERROR_INVALID_VALUE;
    }
    STATE.lock().initialized = true;
    CUDA_SUCCESS
}

/// # Safety
/// `v` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn cuDriverGetVersion(v: *mut c_int) -> CUresult {
    if v.is_null() {
        return CUDA_ERROR_INVALID_VALUE;
    }
    // SAFETY: non-null, valid for a write by this function's contract.
    unsafe { *v = 13000 };
    CUDA_SUCCESS
}

/// # Safety
/// `n` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetCount(n: *mut c_int) -> CUresult {
    let s = STATE.lock();
    if !s.initialized {
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    if n.is_null() {
        return CUDA_ERROR_INVALID_VALUE;
    }
    // SAFETY: non-null, valid for a write by this function's contract.
    unsafe { *n = s.devices };
    CUDA_SUCCESS
}

/// # Safety
/// `dev` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn cuDeviceGet(dev: *mut CUdevice, ordinal: c_int) -> CUresult {
    let s = STATE.lock();
    if !s.initialized {
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    if s.devices == 0 {
        return CUDA_ERROR_NO_DEVICE;
    }
    if dev.is_null() || ordinal < 0 || ordinal >= s.devices {
        return CUDA_ERROR_INVALID_DEVICE;
    }
    // SAFETY: non-null, valid for a write by this function's contract.
    unsafe { *dev = ordinal };
    CUDA_SUCCESS
}

/// # Safety
/// `ctx` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn cuDevicePrimaryCtxRetain(ctx: *mut CUcontext, dev: CUdevice) -> CUresult {
    let mut s = STATE.lock();
    if !s.initialized {
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    if ctx.is_null() || dev < 0 || dev >= s.devices {
        return CUDA_ERROR_INVALID_DEVICE;
    }
    *s.retained.entry(dev).or_default() += 1;
    // SAFETY: non-null, valid for a write by this function's contract.
    unsafe { *ctx = token(dev) as CUcontext };
    CUDA_SUCCESS
}

#[no_mangle]
pub extern "C" fn cuDevicePrimaryCtxRelease_v2(dev: CUdevice) -> CUresult {
    let mut s = STATE.lock();
    match s.retained.get_mut(&dev) {
        Some(n) if *n > 0 => {
            *n -= 1;
            CUDA_SUCCESS
        }
        _ => CUDA_ERROR_INVALID_CONTEXT,
    }
}

#[no_mangle]
pub extern "C" fn cuCtxSetCurrent(ctx: CUcontext) -> CUresult {
    let t = ctx as usize;
    if t != 0 {
        let s = STATE.lock();
        let dev = t as CUdevice - 1;
        if s.retained.get(&dev).is_none_or(|n| *n == 0) {
            return CUDA_ERROR_INVALID_CONTEXT;
        }
    }
    CURRENT.with(|c| c.set(t));
    CUDA_SUCCESS
}

/// # Safety
/// `ctx` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn cuCtxGetCurrent(ctx: *mut CUcontext) -> CUresult {
    if ctx.is_null() {
        return CUDA_ERROR_INVALID_VALUE;
    }
    // SAFETY: non-null, valid for a write by this function's contract.
    unsafe { *ctx = CURRENT.with(Cell::get) as CUcontext };
    CUDA_SUCCESS
}

/// The device of the calling thread's current context.
fn current_device() -> Option<CUdevice> {
    let t = CURRENT.with(Cell::get);
    (t != 0).then(|| t as CUdevice - 1)
}

/// # Safety
/// `dptr` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn cuMemAlloc_v2(dptr: *mut CUdeviceptr, bytes: usize) -> CUresult {
    let Some(device) = current_device() else { return CUDA_ERROR_INVALID_CONTEXT };
    if dptr.is_null() || bytes == 0 {
        return CUDA_ERROR_INVALID_VALUE;
    }
    let Ok(layout) = Layout::from_size_align(bytes, ALIGN) else { return CUDA_ERROR_OUT_OF_MEMORY };
    // SAFETY: a layout of non-zero size.
    let p = unsafe { std::alloc::alloc_zeroed(layout) };
    if p.is_null() {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    STATE.lock().allocs.insert(p as u64, Alloc { len: bytes, device });
    // SAFETY: non-null, valid for a write by this function's contract.
    unsafe { *dptr = p as u64 };
    CUDA_SUCCESS
}

#[no_mangle]
pub extern "C" fn cuMemFree_v2(dptr: CUdeviceptr) -> CUresult {
    let Some(a) = STATE.lock().allocs.remove(&dptr) else { return CUDA_ERROR_INVALID_VALUE };
    // SAFETY: allocated above with this layout (same size and alignment), freed once (removed).
    unsafe { std::alloc::dealloc(dptr as *mut u8, Layout::from_size_align(a.len, ALIGN).unwrap()) };
    CUDA_SUCCESS
}

/// One copy between host memory and a device range: checks as the driver does, then copies.
///
/// # Safety
/// The host range is valid for `bytes` (reads for HtoD, writes for DtoH).
unsafe fn copy(call: &str, host: *mut u8, device: CUdeviceptr, bytes: usize, to_device: bool) -> CUresult {
    if current_device().is_none() {
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    if host.is_null() && bytes > 0 {
        return CUDA_ERROR_INVALID_VALUE;
    }
    {
        let mut s = STATE.lock();
        let Some((_, a)) = find(&s, device, bytes as u64) else { return CUDA_ERROR_INVALID_VALUE };
        LAST_DEVICE.store(a.device as i64, Relaxed);
        if should_fail(&mut s, call) {
            return CUDA_ERROR_LAUNCH_FAILED;
        }
    }
    let us = LATENCY_US.load(Relaxed);
    if us > 0 {
        std::thread::sleep(std::time::Duration::from_micros(us));
    }
    // SAFETY: the device range lies in a live allocation (checked above; the caller must not
    // free it meanwhile, as with the driver); the host range is valid by this function's
    // contract; they are distinct allocations.
    unsafe {
        if to_device {
            std::ptr::copy_nonoverlapping(host as *const u8, device as *mut u8, bytes);
        } else {
            std::ptr::copy_nonoverlapping(device as *const u8, host, bytes);
        }
    }
    let (n, b) = if to_device { (&HTOD, &HTOD_BYTES) } else { (&DTOH, &DTOH_BYTES) };
    n.fetch_add(1, Relaxed);
    b.fetch_add(bytes as u64, Relaxed);
    CUDA_SUCCESS
}

/// # Safety
/// `stream` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn cuStreamCreate(stream: *mut *mut c_void, _flags: c_uint) -> CUresult {
    let Some(device) = current_device() else { return CUDA_ERROR_INVALID_CONTEXT };
    if stream.is_null() {
        return CUDA_ERROR_INVALID_VALUE;
    }
    let mut s = STATE.lock();
    let id = s.next_stream;
    s.next_stream += 1;
    s.streams.insert(id, (device, Vec::new()));
    // SAFETY: non-null, valid for a write by this function's contract.
    unsafe { *stream = id as *mut c_void };
    CUDA_SUCCESS
}

/// Runs the stream's queued copies, in order.
#[no_mangle]
pub extern "C" fn cuStreamSynchronize(stream: *mut c_void) -> CUresult {
    let pending = match STATE.lock().streams.get_mut(&(stream as usize)) {
        Some((_, q)) => std::mem::take(q),
        None => return CUDA_ERROR_INVALID_VALUE,
    };
    for Pending(to, from, n) in pending {
        // SAFETY: both ranges were checked when queued, and the caller keeps them alive until
        // this returns (as the driver's contract asks).
        unsafe { std::ptr::copy_nonoverlapping(from as *const u8, to as *mut u8, n) };
    }
    CUDA_SUCCESS
}

/// Checks and queues one asynchronous copy on `stream`.
fn enqueue(
    call: &str,
    stream: *mut c_void,
    to: usize,
    from: usize,
    device: CUdeviceptr,
    bytes: usize,
    to_device: bool,
) -> CUresult {
    let Some(current) = current_device() else { return CUDA_ERROR_INVALID_CONTEXT };
    if to == 0 || from == 0 {
        return CUDA_ERROR_INVALID_VALUE;
    }
    let mut s = STATE.lock();
    let Some((_, a)) = find(&s, device, bytes as u64) else { return CUDA_ERROR_INVALID_VALUE };
    LAST_DEVICE.store(a.device as i64, Relaxed);
    if should_fail(&mut s, call) {
        return CUDA_ERROR_LAUNCH_FAILED;
    }
    match s.streams.get_mut(&(stream as usize)) {
        Some((d, q)) if *d == current => q.push(Pending(to, from, bytes)),
        _ => return CUDA_ERROR_INVALID_VALUE,
    }
    drop(s);
    let us = LATENCY_US.load(Relaxed);
    if us > 0 {
        std::thread::sleep(std::time::Duration::from_micros(us));
    }
    let (n, b) = if to_device { (&HTOD, &HTOD_BYTES) } else { (&DTOH, &DTOH_BYTES) };
    n.fetch_add(1, Relaxed);
    b.fetch_add(bytes as u64, Relaxed);
    CUDA_SUCCESS
}

#[no_mangle]
pub extern "C" fn cuMemcpyHtoDAsync_v2(
    dst: CUdeviceptr,
    src: *const c_void,
    bytes: usize,
    stream: *mut c_void,
) -> CUresult {
    enqueue("cuMemcpyHtoDAsync_v2", stream, dst as usize, src as usize, dst, bytes, true)
}

#[no_mangle]
pub extern "C" fn cuMemcpyDtoHAsync_v2(
    dst: *mut c_void,
    src: CUdeviceptr,
    bytes: usize,
    stream: *mut c_void,
) -> CUresult {
    enqueue("cuMemcpyDtoHAsync_v2", stream, dst as usize, src as usize, src, bytes, false)
}

/// # Safety
/// `src` is valid for reads of `bytes`.
#[no_mangle]
pub unsafe extern "C" fn cuMemcpyHtoD_v2(dst: CUdeviceptr, src: *const c_void, bytes: usize) -> CUresult {
    // SAFETY: by this function's contract.
    unsafe { copy("cuMemcpyHtoD_v2", src as *mut u8, dst, bytes, true) }
}

/// # Safety
/// `dst` is valid for writes of `bytes`.
#[no_mangle]
pub unsafe extern "C" fn cuMemcpyDtoH_v2(dst: *mut c_void, src: CUdeviceptr, bytes: usize) -> CUresult {
    // SAFETY: by this function's contract.
    unsafe { copy("cuMemcpyDtoH_v2", dst.cast(), src, bytes, false) }
}

const CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED: CUresult = 712;
const CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED: CUresult = 713;

/// Records `[p, p + bytes)` as page-locked host memory (overlaps refused, as by the driver).
#[no_mangle]
pub extern "C" fn cuMemHostRegister_v2(p: *mut c_void, bytes: usize, _flags: c_uint) -> CUresult {
    if current_device().is_none() {
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    if p.is_null() || bytes == 0 {
        return CUDA_ERROR_INVALID_VALUE;
    }
    let (start, end) = (p as u64, p as u64 + bytes as u64);
    let mut s = STATE.lock();
    let overlaps = s.pinned.range(..end).next_back().is_some_and(|(&a, &n)| a + n as u64 > start);
    if overlaps {
        return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    }
    s.pinned.insert(start, bytes);
    CUDA_SUCCESS
}

#[no_mangle]
pub extern "C" fn cuMemHostUnregister(p: *mut c_void) -> CUresult {
    match STATE.lock().pinned.remove(&(p as u64)) {
        Some(_) => CUDA_SUCCESS,
        None => CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED,
    }
}

/// # Safety
/// `data` is valid for a write of the attribute's type (unsigned int, int, pointer or size_t).
#[no_mangle]
pub unsafe extern "C" fn cuPointerGetAttribute(data: *mut c_void, attribute: c_int, ptr: CUdeviceptr) -> CUresult {
    if data.is_null() {
        return CUDA_ERROR_INVALID_VALUE;
    }
    let s = STATE.lock();
    if !s.initialized {
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    // Page-locked host memory: known to the driver, as host memory.
    if attribute == CU_POINTER_ATTRIBUTE_MEMORY_TYPE
        && s.pinned.range(..=ptr).next_back().is_some_and(|(&a, &n)| ptr < a + n as u64)
    {
        // SAFETY: `data` is valid for an unsigned int by this function's contract.
        unsafe { *data.cast::<c_uint>() = 1 }; // CU_MEMORYTYPE_HOST
        return CUDA_SUCCESS;
    }
    // Host memory the driver does not know: as the driver answers for it.
    let Some((start, a)) = find(&s, ptr, 1) else { return CUDA_ERROR_INVALID_VALUE };
    // SAFETY: `data` is valid for the attribute's type by this function's contract.
    unsafe {
        match attribute {
            CU_POINTER_ATTRIBUTE_MEMORY_TYPE => *data.cast::<c_uint>() = CU_MEMORYTYPE_DEVICE,
            CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL => *data.cast::<c_int>() = a.device,
            CU_POINTER_ATTRIBUTE_CONTEXT => *data.cast::<CUcontext>() = token(a.device) as CUcontext,
            CU_POINTER_ATTRIBUTE_RANGE_START_ADDR => *data.cast::<CUdeviceptr>() = start,
            CU_POINTER_ATTRIBUTE_RANGE_SIZE => *data.cast::<usize>() = a.len,
            _ => return CUDA_ERROR_INVALID_VALUE,
        }
    }
    CUDA_SUCCESS
}

/// # Safety
/// `name` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn cuGetErrorName(error: CUresult, name: *mut *const c_char) -> CUresult {
    let s: &'static CStr = match error {
        CUDA_SUCCESS => c"CUDA_SUCCESS",
        CUDA_ERROR_INVALID_VALUE => c"CUDA_ERROR_INVALID_VALUE",
        CUDA_ERROR_OUT_OF_MEMORY => c"CUDA_ERROR_OUT_OF_MEMORY",
        CUDA_ERROR_NOT_INITIALIZED => c"CUDA_ERROR_NOT_INITIALIZED",
        CUDA_ERROR_NO_DEVICE => c"CUDA_ERROR_NO_DEVICE",
        CUDA_ERROR_INVALID_DEVICE => c"CUDA_ERROR_INVALID_DEVICE",
        CUDA_ERROR_INVALID_CONTEXT => c"CUDA_ERROR_INVALID_CONTEXT",
        CUDA_ERROR_LAUNCH_FAILED => c"CUDA_ERROR_LAUNCH_FAILED",
        CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED => c"CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED",
        CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED => c"CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED",
        _ => return CUDA_ERROR_INVALID_VALUE,
    };
    if name.is_null() {
        return CUDA_ERROR_INVALID_VALUE;
    }
    // SAFETY: non-null, valid for a write by this function's contract.
    unsafe { *name = s.as_ptr() };
    CUDA_SUCCESS
}

/// Applies one control command (README.md): 0, or -1 for a command it does not know.
///
/// # Safety
/// `cmd` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn cuda_sim_control(cmd: *const c_char) -> c_int {
    if cmd.is_null() {
        return -1;
    }
    // SAFETY: NUL-terminated by this function's contract.
    let cmd = unsafe { CStr::from_ptr(cmd) }.to_string_lossy().into_owned();
    let words: Vec<&str> = cmd.split_whitespace().collect();
    let mut s = STATE.lock();
    match words.as_slice() {
        ["devices", n] => match n.parse::<c_int>() {
            Ok(n) if n >= 0 => s.devices = n,
            _ => return -1,
        },
        ["fail", call @ ("cuMemcpyDtoH_v2" | "cuMemcpyHtoD_v2" | "cuMemcpyDtoHAsync_v2" | "cuMemcpyHtoDAsync_v2"), n] => {
            match n.parse::<u64>() {
                Ok(n) => {
                    s.fail.insert(call.to_string(), n);
                }
                Err(_) => return -1,
            }
        }
        ["latency_us", n] => match n.parse::<u64>() {
            Ok(n) => LATENCY_US.store(n, Relaxed),
            Err(_) => return -1,
        },
        ["calm"] => {
            s.fail.clear();
            LATENCY_US.store(0, Relaxed);
        }
        _ => return -1,
    }
    0
}

/// Counters as one JSON object (valid until the next call on this thread).
#[no_mangle]
pub extern "C" fn cuda_sim_stats() -> *const c_char {
    thread_local! {
        static OUT: std::cell::RefCell<std::ffi::CString> = std::cell::RefCell::new(std::ffi::CString::default());
    }
    let s = STATE.lock();
    let json = format!(
        "{{\"dtoh\":{},\"htod\":{},\"dtoh_bytes\":{},\"htod_bytes\":{},\"allocations\":{},\"contexts\":{},\"last_device\":{},\"pinned_bytes\":{}}}",
        DTOH.load(Relaxed),
        HTOD.load(Relaxed),
        DTOH_BYTES.load(Relaxed),
        HTOD_BYTES.load(Relaxed),
        s.allocs.len(),
        s.retained.values().sum::<u64>(),
        LAST_DEVICE.load(Relaxed),
        s.pinned.values().sum::<usize>(),
    );
    OUT.with(|o| {
        *o.borrow_mut() = std::ffi::CString::new(json).unwrap_or_default();
        o.borrow().as_ptr()
    })
}
